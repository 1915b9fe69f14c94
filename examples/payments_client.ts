// deno-lint-ignore-file no-console
/**
 * A typed client of the payments API, built on the shared zod wire schemas:
 * request types are inferred from them and every response is parsed with
 * them, so a drift between server and client fails loudly.
 *
 * Run it against a sandbox:
 *
 * ```sh
 * deno task payments --port 8081 --token dev &
 * PAYMENTS_URL=http://127.0.0.1:8081/vendor/v4 PAYMENTS_TOKEN=dev \
 *   deno run -A examples/payments_client.ts
 * ```
 *
 * @module
 */
import type { z } from "@hono/zod-openapi";
import * as S from "../shared/payments_schemas.ts";

/** A failed call: HTTP status plus the `{"errors":[...]}` envelope. */
export class PaymentsApiError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** Envelope items. */
  readonly errors: S.ErrorItem[];
  /** Build from a status and an envelope. */
  constructor(status: number, errors: S.ErrorItem[]) {
    super(`${status} ${errors.map((e) => `${e.code} ${e.message} (${e.detail})`).join("; ")}`);
    this.name = "PaymentsApiError";
    this.status = status;
    this.errors = errors;
  }
}

/** Options of {@link PaymentsClient}. */
export interface PaymentsClientOptions {
  /** Base URL including the base path, e.g. `http://127.0.0.1:8081/vendor/v4`. */
  baseUrl: string;
  /** Bearer token. */
  token: string;
  /** `fetch` to use (inject a client with h2c, a mock, ...). */
  fetch?: typeof fetch;
}

/** Options of a write call. */
export interface CallOptions {
  /** Idempotency key sent as `Request-Id`. */
  requestId?: string;
}

/** A created charge with the Request-Id that addresses its void. */
export interface CreatedCharge {
  /** The charge. */
  charge: S.Charge;
  /** The `Request-Id` of the create request (yours or generated). */
  requestId: string;
}

/**
 * Typed payments client.
 *
 * @example
 * ```ts
 * import type { ChargeInput } from "../shared/payments_schemas.ts";
 * declare const card: ChargeInput["card"];
 *
 * const api = new PaymentsClient({ baseUrl: "http://127.0.0.1:8081/vendor/v4", token: "dev" });
 * const { charge, requestId } = await api.createCharge({ amount: "10.00", currency: "USD", card });
 * await api.capture(charge.id, {});
 * ```
 */
export class PaymentsClient {
  readonly #base: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;

  /** Build a client. */
  constructor(opts: PaymentsClientOptions) {
    this.#base = opts.baseUrl.replace(/\/+$/, "");
    this.#token = opts.token;
    this.#fetch = opts.fetch ?? fetch;
  }

  async #call<T extends z.ZodType>(
    schema: T,
    method: string,
    path: string,
    body?: unknown,
    opts: CallOptions & { auth?: boolean } = {},
  ): Promise<{ data: z.infer<T>; headers: Headers }> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (opts.auth !== false) headers.authorization = `Bearer ${this.#token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    if (opts.requestId) headers["request-id"] = opts.requestId;
    const res = await this.#fetch(`${this.#base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new PaymentsApiError(res.status, S.ErrorEnvelope.parse(json).errors);
    return { data: schema.parse(json), headers: res.headers };
  }

  #e(id: string): string {
    return encodeURIComponent(id);
  }

  /** Store a card. */
  async createCard(customerId: string, card: S.CardInput, o?: CallOptions): Promise<S.CardCreated> {
    return (await this.#call(
      S.CardCreated,
      "POST",
      `/customers/${this.#e(customerId)}/cards`,
      card,
      o,
    ))
      .data;
  }
  /** Read a card. */
  async getCard(customerId: string, cardId: string): Promise<S.Card> {
    return (await this.#call(
      S.Card,
      "GET",
      `/customers/${this.#e(customerId)}/cards/${this.#e(cardId)}`,
    ))
      .data;
  }
  /** Store the card a one-time card token stands for (the token is spent). */
  async createCardFromToken(
    customerId: string,
    token: string,
    o?: CallOptions,
  ): Promise<S.CardCreated> {
    const path = `/customers/${this.#e(customerId)}/cards/createFromToken`;
    return (await this.#call(S.CardCreated, "POST", path, { value: token }, o)).data;
  }
  /** List cards, newest first (at most `count`). */
  async listCards(customerId: string, count?: number): Promise<S.Card[]> {
    const q = count === undefined ? "" : `?count=${count}`;
    return (await this.#call(S.CardList, "GET", `/customers/${this.#e(customerId)}/cards${q}`))
      .data;
  }
  /** Delete a card. */
  async deleteCard(customerId: string, cardId: string): Promise<S.CardDeleted> {
    const path = `/customers/${this.#e(customerId)}/cards/${this.#e(cardId)}`;
    return (await this.#call(S.CardDeleted, "DELETE", path)).data;
  }
  /** Store a bank account. */
  async createBankAccount(
    customerId: string,
    account: S.BankAccountInput,
    o?: CallOptions,
  ): Promise<S.BankAccount> {
    const path = `/customers/${this.#e(customerId)}/bank-accounts`;
    return (await this.#call(S.BankAccount, "POST", path, account, o)).data;
  }
  /** Read a bank account. */
  async getBankAccount(customerId: string, id: string): Promise<S.BankAccount> {
    const path = `/customers/${this.#e(customerId)}/bank-accounts/${this.#e(id)}`;
    return (await this.#call(S.BankAccount, "GET", path)).data;
  }
  /** Store the bank account a one-time bank-account token stands for (the token is spent). */
  async createBankAccountFromToken(
    customerId: string,
    token: string,
    o?: CallOptions,
  ): Promise<S.BankAccount> {
    const path = `/customers/${this.#e(customerId)}/bank-accounts/createFromToken`;
    return (await this.#call(S.BankAccount, "POST", path, { value: token }, o)).data;
  }
  /** List bank accounts, newest first (at most `count`). */
  async listBankAccounts(customerId: string, count?: number): Promise<S.BankAccount[]> {
    const q = count === undefined ? "" : `?count=${count}`;
    const path = `/customers/${this.#e(customerId)}/bank-accounts${q}`;
    return (await this.#call(S.BankAccountList, "GET", path)).data;
  }
  /** Delete a bank account. */
  async deleteBankAccount(customerId: string, id: string): Promise<S.BankAccountDeleted> {
    const path = `/customers/${this.#e(customerId)}/bank-accounts/${this.#e(id)}`;
    return (await this.#call(S.BankAccountDeleted, "DELETE", path)).data;
  }
  /** Exchange a card or bank account for a one-time token (no auth). */
  async createToken(input: S.TokenInput): Promise<S.Token> {
    return (await this.#call(S.Token, "POST", "/payments/tokens", input, { auth: false })).data;
  }
  /** Create a charge; returns it with the Request-Id that addresses its void. */
  async createCharge(input: S.ChargeInput, o?: CallOptions): Promise<CreatedCharge> {
    const { data, headers } = await this.#call(S.Charge, "POST", "/payments/charges", input, o);
    return { charge: data, requestId: headers.get("request-id") ?? o?.requestId ?? "" };
  }
  /** Read a charge. */
  async getCharge(id: string): Promise<S.Charge> {
    return (await this.#call(S.Charge, "GET", `/payments/charges/${this.#e(id)}`)).data;
  }
  /** Capture an authorized charge. */
  async capture(id: string, input: S.AdjustInput = {}, o?: CallOptions): Promise<S.Charge> {
    const path = `/payments/charges/${this.#e(id)}/capture`;
    return (await this.#call(S.Charge, "POST", path, input, o)).data;
  }
  /** Refund a charge. */
  async refund(id: string, input: S.AdjustInput = {}, o?: CallOptions): Promise<S.Refund> {
    const path = `/payments/charges/${this.#e(id)}/refunds`;
    return (await this.#call(S.Refund, "POST", path, input, o)).data;
  }
  /** Read a refund. */
  async getRefund(chargeId: string, refundId: string): Promise<S.Refund> {
    const path = `/payments/charges/${this.#e(chargeId)}/refunds/${this.#e(refundId)}`;
    return (await this.#call(S.Refund, "GET", path)).data;
  }
  /** Void a charge by the Request-Id of its create request. */
  async void(chargeRequestId: string, input: S.VoidInput = {}, o?: CallOptions): Promise<S.Void> {
    const path = `/payments/txn-requests/${this.#e(chargeRequestId)}/void`;
    return (await this.#call(S.Void, "POST", path, input, o)).data;
  }
  /** Create an e-check. */
  async createECheck(input: S.ECheckInput, o?: CallOptions): Promise<S.ECheck> {
    return (await this.#call(S.ECheck, "POST", "/payments/echecks", input, o)).data;
  }
  /** Refund an e-check (total ≤ its amount). */
  async refundECheck(id: string, input: S.AdjustInput = {}, o?: CallOptions): Promise<S.Refund> {
    const path = `/payments/echecks/${this.#e(id)}/refunds`;
    return (await this.#call(S.Refund, "POST", path, input, o)).data;
  }
  /** Read a refund of an e-check. */
  async getECheckRefund(echeckId: string, refundId: string): Promise<S.Refund> {
    const path = `/payments/echecks/${this.#e(echeckId)}/refunds/${this.#e(refundId)}`;
    return (await this.#call(S.Refund, "GET", path)).data;
  }
  /** Read an e-check. */
  async getECheck(id: string): Promise<S.ECheck> {
    return (await this.#call(S.ECheck, "GET", `/payments/echecks/${this.#e(id)}`)).data;
  }
}

if (import.meta.main) {
  const api = new PaymentsClient({
    baseUrl: Deno.env.get("PAYMENTS_URL") ?? "http://127.0.0.1:8081/vendor/v4",
    token: Deno.env.get("PAYMENTS_TOKEN") ?? "dev",
  });
  const card = { number: "4111111111111111", expMonth: 12, expYear: 2030, cvc: "123" };
  const { charge, requestId } = await api.createCharge({ amount: "25.00", currency: "USD", card });
  console.log("charge", charge.id, charge.status, "request", requestId);
  const captured = await api.capture(charge.id, { amount: "20.00" });
  console.log("captured", captured.captureDetail?.amount);
  const refund = await api.refund(charge.id, { amount: "5.00" });
  console.log("refund", refund.id, refund.amount, refund.status);
  try {
    await api.refund(charge.id, { amount: "99.00" });
  } catch (e) {
    console.log("over-refund rejected:", (e as Error).message);
  }
}
