/**
 * Card routes: create, get, list (newest first), delete.
 *
 * @module
 */
import * as S from "../../shared/payments_schemas.ts";
import {
  countOf,
  CountQuery,
  createRoute,
  type Endpoint,
  ERROR_RESPONSES,
  jsonBody,
  jsonResponse,
  param,
  readJson,
  RequestIdHeader,
  requestIdOf,
  z,
} from "./_endpoint.ts";

const Customer = z.object({ customerId: z.string() });
const CustomerCard = z.object({ customerId: z.string(), cardId: z.string() });

/** Card endpoints. */
export const cardEndpoints: Endpoint[] = [
  {
    route: createRoute({
      method: "post",
      path: "/customers/{customerId}/cards",
      operationId: "createCard",
      tags: ["Cards"],
      summary: "Store a card for a customer",
      request: { params: Customer, headers: RequestIdHeader, body: jsonBody(S.CardInput, "Card") },
      responses: { 201: jsonResponse(S.CardCreated, "Card stored"), ...ERROR_RESPONSES },
    }),
    handle: async (h) =>
      h.svc.createCard(param(h, "customerId"), await readJson(h), requestIdOf(h.c)),
  },
  {
    route: createRoute({
      method: "post",
      path: "/customers/{customerId}/cards/createFromToken",
      operationId: "createCardFromToken",
      tags: ["Cards"],
      summary: "Store the card a one-time card token stands for (the token is spent)",
      request: {
        params: Customer,
        headers: RequestIdHeader,
        body: jsonBody(S.FromTokenInput, "The token"),
      },
      responses: { 201: jsonResponse(S.CardCreated, "Card stored"), ...ERROR_RESPONSES },
    }),
    handle: async (h) =>
      h.svc.createCardFromToken(param(h, "customerId"), await readJson(h), requestIdOf(h.c)),
  },
  {
    route: createRoute({
      method: "get",
      path: "/customers/{customerId}/cards/{cardId}",
      operationId: "getCard",
      tags: ["Cards"],
      summary: "Read a stored card",
      request: { params: CustomerCard },
      responses: { 200: jsonResponse(S.Card, "Card"), ...ERROR_RESPONSES },
    }),
    handle: (h) => h.svc.getCard(param(h, "customerId"), param(h, "cardId")),
  },
  {
    route: createRoute({
      method: "get",
      path: "/customers/{customerId}/cards",
      operationId: "listCards",
      tags: ["Cards"],
      summary: "List a customer's cards, newest first (`?count=` at most that many)",
      request: { params: Customer, query: CountQuery },
      responses: { 200: jsonResponse(S.CardList, "Cards"), ...ERROR_RESPONSES },
    }),
    handle: (h) => h.svc.listCards(param(h, "customerId"), countOf(h.c)),
  },
  {
    route: createRoute({
      method: "delete",
      path: "/customers/{customerId}/cards/{cardId}",
      operationId: "deleteCard",
      tags: ["Cards"],
      summary: "Delete a stored card",
      request: { params: CustomerCard },
      responses: { 200: jsonResponse(S.CardDeleted, "Deleted"), ...ERROR_RESPONSES },
    }),
    handle: (h) => h.svc.deleteCard(param(h, "customerId"), param(h, "cardId")),
  },
];
