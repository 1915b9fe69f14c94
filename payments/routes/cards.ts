/**
 * Card routes: create, get, list (newest first), delete.
 *
 * @module
 */
import * as S from "../../shared/payments_schemas.ts";
import {
  countOf,
  CountQuery,
  type Endpoint,
  param,
  readJson,
  requestIdOf,
  routeOf,
  z,
} from "./_endpoint.ts";

const Customer = z.object({ customerId: z.string() });
const CustomerCard = z.object({ customerId: z.string(), cardId: z.string() });
const tag = "Cards";

/** Card endpoints. */
export const cardEndpoints: Endpoint[] = [
  {
    route: routeOf({
      method: "post",
      path: "/customers/{customerId}/cards",
      operationId: "createCard",
      tag,
      summary: "Store a card for a customer",
      params: Customer,
      body: [S.CardInput, "Card"],
      ok: [201, S.CardCreated, "Card stored"],
    }),
    handle: async (h) =>
      h.svc.createCard(param(h, "customerId"), await readJson(h), requestIdOf(h.c)),
  },
  {
    route: routeOf({
      method: "post",
      path: "/customers/{customerId}/cards/createFromToken",
      operationId: "createCardFromToken",
      tag,
      summary: "Store the card a one-time card token stands for (the token is spent)",
      params: Customer,
      body: [S.FromTokenInput, "The token"],
      ok: [201, S.CardCreated, "Card stored"],
    }),
    handle: async (h) =>
      h.svc.createCardFromToken(param(h, "customerId"), await readJson(h), requestIdOf(h.c)),
  },
  {
    route: routeOf({
      method: "get",
      path: "/customers/{customerId}/cards/{cardId}",
      operationId: "getCard",
      tag,
      summary: "Read a stored card",
      params: CustomerCard,
      ok: [200, S.Card, "Card"],
    }),
    handle: (h) => h.svc.getCard(param(h, "customerId"), param(h, "cardId")),
  },
  {
    route: routeOf({
      method: "get",
      path: "/customers/{customerId}/cards",
      operationId: "listCards",
      tag,
      summary: "List a customer's cards, newest first (`?count=` at most that many)",
      params: Customer,
      query: CountQuery,
      ok: [200, S.CardList, "Cards"],
    }),
    handle: (h) => h.svc.listCards(param(h, "customerId"), countOf(h.c)),
  },
  {
    route: routeOf({
      method: "delete",
      path: "/customers/{customerId}/cards/{cardId}",
      operationId: "deleteCard",
      tag,
      summary: "Delete a stored card",
      params: CustomerCard,
      ok: [200, S.CardDeleted, "Deleted"],
    }),
    handle: (h) => h.svc.deleteCard(param(h, "customerId"), param(h, "cardId")),
  },
];
