/**
 * Bank account routes: create, get, list, delete.
 *
 * @module
 */
import * as S from "../../shared/payments_schemas.ts";
import {
  createRoute,
  type Endpoint,
  ERROR_RESPONSES,
  jsonBody,
  jsonResponse,
  readJson,
  RequestIdHeader,
  requestIdOf,
  z,
} from "./_endpoint.ts";

const Customer = z.object({ customerId: z.string() });
const CustomerAccount = z.object({ customerId: z.string(), bankAccountId: z.string() });

/** Bank account endpoints. */
export const bankAccountEndpoints: Endpoint[] = [
  {
    route: createRoute({
      method: "post",
      path: "/customers/{customerId}/bank-accounts",
      operationId: "createBankAccount",
      tags: ["Bank accounts"],
      summary: "Store a bank account for a customer",
      request: {
        params: Customer,
        headers: RequestIdHeader,
        body: jsonBody(S.BankAccountInput, "Bank account"),
      },
      responses: { 201: jsonResponse(S.BankAccount, "Bank account stored"), ...ERROR_RESPONSES },
    }),
    handle: async ({ c, svc }) =>
      svc.createBankAccount(c.req.param("customerId")!, await readJson(c), requestIdOf(c)),
  },
  {
    route: createRoute({
      method: "get",
      path: "/customers/{customerId}/bank-accounts/{bankAccountId}",
      operationId: "getBankAccount",
      tags: ["Bank accounts"],
      summary: "Read a stored bank account",
      request: { params: CustomerAccount },
      responses: { 200: jsonResponse(S.BankAccount, "Bank account"), ...ERROR_RESPONSES },
    }),
    handle: ({ c, svc }) =>
      svc.getBankAccount(c.req.param("customerId")!, c.req.param("bankAccountId")!),
  },
  {
    route: createRoute({
      method: "get",
      path: "/customers/{customerId}/bank-accounts",
      operationId: "listBankAccounts",
      tags: ["Bank accounts"],
      summary: "List a customer's bank accounts, newest first",
      request: { params: Customer },
      responses: { 200: jsonResponse(S.BankAccountList, "Bank accounts"), ...ERROR_RESPONSES },
    }),
    handle: ({ c, svc }) => svc.listBankAccounts(c.req.param("customerId")!),
  },
  {
    route: createRoute({
      method: "delete",
      path: "/customers/{customerId}/bank-accounts/{bankAccountId}",
      operationId: "deleteBankAccount",
      tags: ["Bank accounts"],
      summary: "Delete a stored bank account",
      request: { params: CustomerAccount },
      responses: { 200: jsonResponse(S.BankAccountDeleted, "Deleted"), ...ERROR_RESPONSES },
    }),
    handle: ({ c, svc }) =>
      svc.deleteBankAccount(c.req.param("customerId")!, c.req.param("bankAccountId")!),
  },
];
