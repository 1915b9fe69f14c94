import assert from "node:assert/strict";
import { websocketSection, websocketSummary } from "./websocket.ts";

Deno.test("#29.2: bench: the WebSocket row, its ratios over Caddy, absent when not measured", () => {
  const row = (server: string, transport: "h3" | "tcp", p50: number, p99: number) => ({
    server,
    transport,
    rounds: 3,
    n: 3000,
    p50,
    p99,
    max: p99 * 2,
    errors: 0,
  });
  const rows = [
    row("spooky", "h3", 0.8, 2),
    row("spooky", "tcp", 1, 3),
    row("caddy", "tcp", 0.5, 1.5),
  ];
  const text = websocketSection(rows).join("\n");
  assert.match(text, /^## WebSockets$/m);
  assert.match(
    text,
    /^\| spooky \| h3 \| 3000 \| 0\.80 \| 2\.00 \| 4\.00 \| 1\.60x \| 1\.33x \| 0 \|$/m,
  );
  assert.match(
    text,
    /^\| caddy \| tcp \| 3000 \| 0\.50 \| 1\.50 \| 3\.00 \| 1\.00x \| 1\.00x \| 0 \|$/m,
  );
  assert.deepEqual(websocketSection(undefined), []);
  assert.deepEqual(websocketSummary([]), []);
  assert.match(websocketSummary(rows).join("\n"), /spooky {7}tcp: 1\.00 \/ 3\.00/);
});
