/**
 * Cost of one balancing decision (`candidates()[0]`, which builds the whole
 * ordered list) per algorithm at 100 backends, and of building a balancer.
 *
 * Run: `deno bench proxy/balancer/balancer_bench.ts`
 */

import { backends, request } from "./_test_util.ts";
import { createBalancer } from "./create_balancer.ts";
import type { LoadBalancingConfig } from "./types.ts";

const N = 100;
const list = backends(
  Array.from({ length: N }, (_, i) => `backend-${i}`),
  Array.from({ length: N }, (_, i) => 50 + (i % 4) * 50),
);
const down = new Set(["backend-3", "backend-40", "backend-77"]);
const isAvailable = (id: string) => !down.has(id);
const requests = Array.from(
  { length: 1024 },
  (_, i) => request(`/api/items/${i}?page=1`, { "x-user": `user-${i}`, cookie: `a=1; sid=s${i}` }),
);

const configs: Record<string, LoadBalancingConfig> = {
  "random": { type: "random" },
  "round-robin": { type: "round-robin" },
  "consistent-hash (header)": { type: "consistent-hash", key: "header:x-user" },
  "consistent-hash (cookie)": { type: "consistent-hash", key: "cookie:sid" },
};

for (const [name, config] of Object.entries(configs)) {
  const lb = createBalancer(config, list);
  let i = 0;
  Deno.bench({
    name: `${name}: candidates()[0], ${N} backends`,
    group: "pick",
    fn: () => {
      const chosen = lb.candidates(requests[i++ & 1023], isAvailable)[0];
      if (chosen === undefined) throw new Error("no backend");
    },
    baseline: name === "round-robin",
  });
}

for (const [name, config] of Object.entries(configs)) {
  Deno.bench({
    name: `${name}: build, ${N} backends`,
    group: "build",
    fn: () => {
      createBalancer(config, list);
    },
  });
}

const small = backends(["a", "b", "c", "d", "e"], [100, 100, 200, 100, 50]);
for (const [name, config] of Object.entries(configs)) {
  const lb = createBalancer(config, small);
  let i = 0;
  Deno.bench({
    name: `${name}: candidates()[0], 5 backends`,
    group: "pick-5",
    baseline: name === "round-robin",
    fn: () => {
      const chosen = lb.candidates(requests[i++ & 1023], isAvailable)[0];
      if (chosen === undefined) throw new Error("no backend");
    },
  });
}
