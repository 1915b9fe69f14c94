/** The project's own HTTP/3 client (see `examples/h3_client.ts`), for tests that control the bytes. */
export { type H3Response, H3TestClient } from "../../examples/h3_client.ts";
