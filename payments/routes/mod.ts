/**
 * The payments API's endpoints, one list per resource: each endpoint is an
 * OpenAPI route (zod schemas) plus a thin handler that calls the service.
 * `payments/app.ts` mounts them all under the base path.
 *
 * @example
 * ```ts
 * import { cardEndpoints, chargeEndpoints } from "./mod.ts";
 *
 * for (const e of [...cardEndpoints, ...chargeEndpoints]) console.log(e.route.method, e.route.path);
 * ```
 *
 * @module
 */

export type { Endpoint, HandlerContext } from "./_endpoint.ts";
// Types of the service and the store that the signatures above use.
export type { PaymentsService } from "../service.ts";
export type { Reply } from "../store/mod.ts";
export { bankAccountEndpoints } from "./bank_accounts.ts";
export { cardEndpoints } from "./cards.ts";
export { chargeEndpoints } from "./charges.ts";
export { echeckEndpoints } from "./echecks.ts";
export { tokenEndpoints } from "./tokens.ts";
