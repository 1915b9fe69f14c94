/** The project's own HTTP/3 client (see `examples/h3_client.ts`), for tests that control the bytes. */
export { type H3Response, H3TestClient, type H3Tunnel } from "../../examples/h3_client.ts";

/**
 * A bare QUIC connection (ALPN `h3`, server name `localhost`) from
 * `endpoint` to the proxy on 127.0.0.1:`port`, trusting the PEM `ca`.
 */
export async function connectH3(
  endpoint: Deno.QuicEndpoint,
  port: number,
  ca: string,
): Promise<Deno.QuicConn> {
  return await Deno.connectQuic({
    endpoint,
    hostname: "127.0.0.1",
    port,
    serverName: "localhost",
    caCerts: [ca],
    alpnProtocols: ["h3"],
  });
}
