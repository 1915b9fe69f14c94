/**
 * HTTP/1.1 servers nobody here wrote, for the interop tests of the proxy's
 * HTTP/1.1 client: Python's `http.server` (HTTP/1.0 answers, closing),
 * Node's `http` (keep-alive, chunked, trailers both ways), nginx (the
 * Debian package; plain, or TLS with HTTP/2 or without) and Caddy over TLS,
 * each serving the shared test site. The TLS nginx and Caddy answer with
 * `x-protocol`, the HTTP version the request came in, so a test sees which
 * one ALPN picked.
 *
 * @module
 */

import { freePort } from "../support/free_port.ts";
import { listening, runCaddy, type Server, spawn, stop, testSite } from "./_servers.ts";

/** TLS of a test server: its key and certificate (PEM paths). */
export interface TestTls {
  readonly keyPath: string;
  readonly certPath: string;
}

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

/**
 * TLS of {@link startNginx} that asks every client for a certificate
 * (`ssl_verify_client on`), HTTP/1.1: a path ending in `/whoami` answers
 * the client certificate's subject, one ending in `/health` 200. A client without a
 * certificate of `clientCa` gets nginx's 400 ("No required SSL certificate
 * was sent") on every path.
 */
export interface NginxMutualTls {
  /** PEM file of nginx's certificate chain. */
  cert: string;
  /** PEM file of its key. */
  key: string;
  /** PEM file of the CA that signs the clients' certificates. */
  clientCa: string;
}

/** The `server` block of {@link startNginx}: the site, or the mutual-TLS one. */
function nginxServer(port: number, dir: string, tls: NginxMutualTls | undefined): string {
  if (tls === undefined) return `listen 127.0.0.1:${port};\n    root ${dir};`;
  return `listen 127.0.0.1:${port} ssl;
    ssl_certificate ${tls.cert};
    ssl_certificate_key ${tls.key};
    ssl_client_certificate ${tls.clientCa};
    ssl_verify_client on;
    location ~ /whoami$ { return 200 "$ssl_client_s_dn"; }
    location ~ /health$ { return 200 "ok"; }`;
}

/**
 * nginx (Debian's) serving the site over HTTP/1.1, in the foreground, all
 * its files in a temporary folder; with `mutualTls`, over TLS requiring a
 * client certificate instead.
 */
export async function startNginx(mutualTls?: NginxMutualTls): Promise<Server> {
  const { dir } = await testSite();
  return await runNginx((port) => nginxServer(port, dir, mutualTls));
}

/**
 * nginx serving the site over TLS with `tls`, answering with `x-protocol`
 * (the request's HTTP version): ALPN `http/1.1` only, or `h2` first when
 * `http2`.
 */
export async function startNginxTls(tls: TestTls, http2: boolean): Promise<Server> {
  const { dir } = await testSite();
  return await runNginx((port) =>
    `listen 127.0.0.1:${port} ssl${http2 ? " http2" : ""};
    ssl_certificate ${tls.certPath};
    ssl_certificate_key ${tls.keyPath};
    add_header x-protocol $server_protocol always;
    root ${dir};`
  );
}

/** nginx in the foreground, all its files in a temporary folder, with the `server` block `server(port)`. */
async function runNginx(server: (port: number) => string): Promise<Server> {
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
    ${server(port)}
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

/**
 * Caddy 2 serving the site over TLS with `tls`, offering HTTP/2 and
 * HTTP/1.1 by ALPN, answering with `x-protocol` (`HTTP/2.0`, `HTTP/1.1`).
 */
export async function startCaddyTls(tls: TestTls): Promise<Server> {
  const { dir } = await testSite();
  return await runCaddy(
    "protocols h1 h2",
    (port) =>
      `https://:${port} {
  bind 127.0.0.1
  tls ${tls.certPath} ${tls.keyPath}
  header x-protocol {http.request.proto}
  root * ${dir}
  file_server
}
`,
  );
}
