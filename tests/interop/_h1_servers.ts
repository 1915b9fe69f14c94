/**
 * HTTP/1.1 servers nobody here wrote, for the interop tests of the proxy's
 * HTTP/1.1 client: Python's `http.server` (HTTP/1.0 answers, closing),
 * Node's `http` (keep-alive, chunked, trailers both ways) and nginx (the
 * Debian package), each serving the shared test site.
 *
 * @module
 */

import { freePort } from "../support/free_port.ts";
import { listening, type Server, spawn, stop, testSite } from "./_servers.ts";

/** `python3 -m http.server` serving the site (its default: HTTP/1.0, one request per connection). */
export async function startPythonServer(): Promise<Server> {
  const { dir } = await testSite();
  const port = freePort();
  const child = spawn("python3", ["-m", "http.server", "--bind", "127.0.0.1", String(port)], dir);
  await listening(port, child, "python http.server");
  return { address: `127.0.0.1:${port}`, close: () => stop(child) };
}

/** Node's own HTTP/1.1 server: the site, `/echo` (the body back, the request's trailers as its own). */
const NODE_HTTP = `
const http = require("node:http");
const fs = require("node:fs");
const [port, dir] = process.argv.slice(1);
const server = http.createServer((req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  if (path === "/echo") {
    const parts = [];
    req.on("data", (c) => parts.push(c));
    req.on("end", () => {
      const body = Buffer.concat(parts);
      const trailers = req.trailers;
      const names = Object.keys(trailers);
      res.writeHead(200, names.length ? { trailer: names.join(", ") } : {});
      res.write(body);
      if (names.length) res.addTrailers(trailers);
      res.end();
    });
    return;
  }
  const file = dir + path;
  if (!/^\\/[a-z]+\\.[a-z]+$/.test(path) || !fs.existsSync(file)) {
    res.writeHead(404, { "content-length": 0 });
    return res.end();
  }
  const data = fs.readFileSync(file);
  res.writeHead(200, { "content-length": data.length });
  res.end(data);
});
server.listen(Number(port), "127.0.0.1");
`;

/** Node's `http` server (run by `node`). */
export async function startNodeHttpServer(): Promise<Server> {
  const { dir } = await testSite();
  const port = freePort();
  const child = spawn("node", ["-e", NODE_HTTP, String(port), dir]);
  await listening(port, child, "node http server");
  return { address: `127.0.0.1:${port}`, close: () => stop(child) };
}

/** nginx (Debian's) serving the site over HTTP/1.1, in the foreground, all its files in a temporary folder. */
export async function startNginx(): Promise<Server> {
  const { dir } = await testSite();
  const port = freePort();
  const conf = await Deno.makeTempDir({ prefix: "spooky-nginx-" });
  const isRoot = Deno.uid() === 0;
  await Deno.writeTextFile(
    `${conf}/nginx.conf`,
    `${isRoot ? "user root;" : ""}
daemon off;
worker_processes 1;
pid ${conf}/nginx.pid;
error_log ${conf}/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${conf}/body;
  proxy_temp_path ${conf}/proxy;
  fastcgi_temp_path ${conf}/fastcgi;
  uwsgi_temp_path ${conf}/uwsgi;
  scgi_temp_path ${conf}/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${dir};
  }
}
`,
  );
  const child = spawn("nginx", ["-c", `${conf}/nginx.conf`, "-p", conf]);
  await listening(port, child, "nginx");
  return {
    address: `127.0.0.1:${port}`,
    close: async () => {
      await stop(child);
      await Deno.remove(conf, { recursive: true }).catch(() => {});
    },
  };
}
