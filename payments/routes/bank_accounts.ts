/**
 * Bank account routes: create, get, list, delete. The spec lists the delete
 * on the collection path with the account id "supplied by the client call";
 * both forms are served: `DELETE .../bank-accounts/{bankAccountId}` and
 * `DELETE .../bank-accounts` with the id as `?bankAccountId=` (or `?id=`) or
 * in a JSON body `{"bankAccountId": ...}` (or `{"id": ...}`).
 *
 * @module
 */
import * as S from "../../shared/payments_schemas.ts";
import { PaymentsError } from "../domain/errors.ts";
import {
  countOf,
  CountQuery,
  createRoute,
  type Endpoint,
  ERROR_RESPONSES,
  type HandlerContext,
  jsonBody,
  jsonResponse,
  MAX_ID_LENGTH,
  param,
  readJson,
  requestIdOf,
  routeOf,
  z,
} from "./_endpoint.ts";

const Customer = z.object({ customerId: z.string() });
const CustomerAccount = z.object({ customerId: z.string(), bankAccountId: z.string() });
const AccountIdQuery = z.object({
  bankAccountId: z.string().optional().openapi({ description: "The account to delete" }),
  id: z.string().optional().openapi({ description: "Same as bankAccountId" }),
});
const AccountIdBody = z.object({
  bankAccountId: z.string().optional(),
  id: z.string().optional(),
}).openapi("BankAccountDeleteRequest");
const tag = "Bank accounts";

/**
 * The account id of a delete on the collection: from the query or the JSON
 * body (`bankAccountId` or `id`). Several different values are 400; none is
 * 400 `bankAccountId is required.`.
 */
async function accountIdOf(h: HandlerContext): Promise<string> {
  const c = h.c;
  const found = new Set<unknown>();
  for (const name of ["bankAccountId", "id"]) {
    for (const v of c.req.queries(name) ?? []) if (v !== "") found.add(v);
  }
  const body = await readJson(h) as Record<string, unknown> | undefined;
  for (const name of ["bankAccountId", "id"]) {
    const v = body?.[name];
    if (v !== undefined && v !== null && v !== "") found.add(v);
  }
  if (found.size === 0) throw PaymentsError.required("bankAccountId");
  const [id] = found;
  if (found.size > 1 || typeof id !== "string") throw PaymentsError.invalid("bankAccountId");
  if (id.length > MAX_ID_LENGTH) throw PaymentsError.notFound("bankAccountId");
  return id;
}

/** Bank account endpoints. */
export const bankAccountEndpoints: Endpoint[] = [
  {
    route: routeOf({
      method: "post",
      path: "/customers/{customerId}/bank-accounts",
      operationId: "createBankAccount",
      tag,
      summary: "Store a bank account for a customer",
      params: Customer,
      body: [S.BankAccountInput, "Bank account"],
      ok: [201, S.BankAccount, "Bank account stored"],
    }),
    handle: async (h) =>
      h.svc.createBankAccount(param(h, "customerId"), await readJson(h), requestIdOf(h.c)),
  },
  {
    route: routeOf({
      method: "post",
      path: "/customers/{customerId}/bank-accounts/createFromToken",
      operationId: "createBankAccountFromToken",
      tag,
      summary: "Store the bank account a one-time bank-account token stands for (token spent)",
      params: Customer,
      body: [S.FromTokenInput, "The token"],
      ok: [201, S.BankAccount, "Bank account stored"],
    }),
    handle: async (h) =>
      h.svc.createBankAccountFromToken(
        param(h, "customerId"),
        await readJson(h),
        requestIdOf(h.c),
      ),
  },
  {
    route: routeOf({
      method: "get",
      path: "/customers/{customerId}/bank-accounts/{bankAccountId}",
      operationId: "getBankAccount",
      tag,
      summary: "Read a stored bank account",
      params: CustomerAccount,
      ok: [200, S.BankAccount, "Bank account"],
    }),
    handle: (h) => h.svc.getBankAccount(param(h, "customerId"), param(h, "bankAccountId")),
  },
  {
    route: routeOf({
      method: "get",
      path: "/customers/{customerId}/bank-accounts",
      operationId: "listBankAccounts",
      tag,
      summary: "List a customer's bank accounts, newest first (`?count=` at most that many)",
      params: Customer,
      query: CountQuery,
      ok: [200, S.BankAccountList, "Bank accounts"],
    }),
    handle: (h) => h.svc.listBankAccounts(param(h, "customerId"), countOf(h.c)),
  },
  {
    route: routeOf({
      method: "delete",
      path: "/customers/{customerId}/bank-accounts/{bankAccountId}",
      operationId: "deleteBankAccount",
      tag,
      summary: "Delete a stored bank account",
      params: CustomerAccount,
      ok: [200, S.BankAccountDeleted, "Deleted"],
    }),
    handle: (h) => h.svc.deleteBankAccount(param(h, "customerId"), param(h, "bankAccountId")),
  },
  {
    route: createRoute({
      method: "delete",
      path: "/customers/{customerId}/bank-accounts",
      operationId: "deleteBankAccountById",
      tags: [tag],
      summary: "Delete a stored bank account named in the query or the body",
      description: "The form the spec lists: the account id travels as `?bankAccountId=` " +
        '(or `?id=`) or in a JSON body `{"bankAccountId": "..."}` (or `{"id": "..."}`).',
      request: {
        params: Customer,
        query: AccountIdQuery,
        body: { ...jsonBody(AccountIdBody, "The account to delete"), required: false },
      },
      responses: { 200: jsonResponse(S.BankAccountDeleted, "Deleted"), ...ERROR_RESPONSES },
    }),
    handle: async (h) => h.svc.deleteBankAccount(param(h, "customerId"), await accountIdOf(h)),
  },
];
