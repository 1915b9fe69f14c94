/**
 * Use cases of the payments sandbox: validation, rules (domain/) and
 * persistence (store/) glued together. Routes call these and only translate
 * HTTP; every method returns the status and JSON body to send.
 *
 * @module
 */
import {
  AdjustInput,
  BankAccountInput,
  CardInput,
  ChargeInput,
  ECheckInput,
  TokenInput,
  VoidInput,
} from "../shared/payments_schemas.ts";
import { capture, refund, voidCharge } from "./domain/charge_rules.ts";
import { PaymentsError } from "./domain/errors.ts";
import { type IdGenerator, randomCode } from "./domain/ids.ts";
import { bankSummaryFrom, cardSummaryFrom, contextFrom } from "./domain/intake.ts";
import { parseAmount } from "./domain/money.ts";
import type {
  AdjustmentRecord,
  BankAccountRecord,
  BankSummary,
  CardRecord,
  CardSummary,
  ChargeRecord,
  ECheckRecord,
  TokenRecord,
} from "./domain/records.ts";
import { triggerOf } from "./domain/triggers.ts";
import { lowerFirstKeys, validate } from "./domain/validate.ts";
import {
  bankAccountView,
  cardCreatedView,
  cardView,
  chargeView,
  echeckView,
  refundView,
  tokenView,
  voidView,
} from "./domain/views.ts";
import type { CommitResult, PaymentsStore } from "./store/kv_store.ts";

/** Lifetime of a one-time token. */
export const TOKEN_TTL_MS = 15 * 60 * 1000;

/** A response to send. */
export interface Reply {
  /** HTTP status. */
  status: number;
  /** JSON body (may be left undefined when `json` is given). */
  body: unknown;
  /** The body already serialized (JSON text), when known: sent as is. */
  json?: string;
  /** Extra headers. */
  headers?: Record<string, string>;
}

/** What the service needs. */
export interface ServiceDeps {
  /** Store over an open KV handle. */
  store: PaymentsStore;
  /** Clock. */
  now: () => Date;
  /** Id generator. */
  ids: IdGenerator;
  /** Random bytes source. */
  random: (b: Uint8Array) => void;
}

function amountOf(value: string | number | undefined, path: string): number | undefined {
  if (value === undefined) return undefined;
  const minor = parseAmount(value);
  if (minor === undefined) throw PaymentsError.invalid(path);
  return minor;
}

function asObject(raw: unknown): unknown {
  if (raw === undefined || raw === null) return {};
  return raw;
}

function chargeViewOf(record: ChargeRecord): { body: unknown; json: string } {
  const body = chargeView(record);
  return { body, json: JSON.stringify(body) };
}

/**
 * The response of a charge that the previous version stored beside it. It
 * is no longer read or written here; a change of the charge deletes it, so
 * that a process of that version sharing the store (a rolling upgrade) does
 * not answer from a stale copy.
 */
function legacyViewKey(id: string): Deno.KvKey {
  return ["charge_view", 1, id];
}

/** The response of get-charge, as JSON text (what the view cache keeps). */
function chargeJson(record: unknown): string {
  return JSON.stringify(chargeView(record as ChargeRecord));
}

function reply(r: CommitResult): Reply {
  const headers = r.replayed ? { ...r.headers, "Idempotent-Replayed": "true" } : r.headers;
  return { status: r.status, body: r.body, json: r.json, headers };
}

/** The payments use cases over one store. */
export class PaymentsService {
  readonly #d: ServiceDeps;

  /** Build the service. */
  constructor(deps: ServiceDeps) {
    this.#d = deps;
  }

  #iso(): string {
    return this.#d.now().toISOString();
  }

  /**
   * A new default payment method replaces the old one: the writes (guarded
   * by versionstamp checks) that clear `default` on the customer's others.
   */
  async #demoteDefaults<T extends { default: boolean; updated: string }>(
    prefix: Deno.KvKey,
    iso: string,
  ): Promise<{ checks: Deno.AtomicCheck[]; sets: { key: Deno.KvKey; value: unknown }[] }> {
    const checks: Deno.AtomicCheck[] = [];
    const sets: { key: Deno.KvKey; value: unknown }[] = [];
    for (const e of await this.#d.store.entries<T>(prefix)) {
      if (!e.value.default) continue;
      checks.push(e);
      sets.push({ key: e.key, value: { ...e.value, default: false, updated: iso } });
    }
    return { checks, sets };
  }

  // ------------------------------------------------------------- cards

  /** POST /customers/{customerId}/cards */
  async createCard(customerId: string, raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(CardInput, asObject(raw));
    const now = this.#d.now();
    const summary = await cardSummaryFrom(input, now, "");
    return reply(
      await this.#d.store.change({
        requestId,
        op: `createCard:${customerId}`,
        plan: async () => {
          const iso = now.toISOString();
          const record: CardRecord = {
            ...summary,
            id: this.#d.ids("card_"),
            customerId,
            created: iso,
            updated: iso,
            default: input.default ?? false,
            isBusiness: input.isBusiness ?? false,
            ...(input.commercialCardCode ? { commercialCardCode: input.commercialCardCode } : {}),
          };
          const key = ["card", customerId, record.id];
          const demoted = record.default
            ? await this.#demoteDefaults<CardRecord>(["card", customerId], iso)
            : { checks: [], sets: [] };
          return {
            checks: [{ key, versionstamp: null }, ...demoted.checks],
            sets: [{ key, value: record }, ...demoted.sets],
            status: 201,
            body: cardCreatedView(record),
          };
        },
      }),
    );
  }

  /** GET /customers/{customerId}/cards/{cardId} */
  async getCard(customerId: string, cardId: string): Promise<Reply> {
    const e = await this.#d.store.get<CardRecord>(["card", customerId, cardId]);
    if (!e.value) throw PaymentsError.notFound("cardId");
    return { status: 200, body: cardView(e.value) };
  }

  /** GET /customers/{customerId}/cards (newest first) */
  async listCards(customerId: string): Promise<Reply> {
    const cards = await this.#d.store.listNewestFirst<CardRecord>(["card", customerId]);
    return { status: 200, body: cards.map(cardView) };
  }

  /** DELETE /customers/{customerId}/cards/{cardId} */
  async deleteCard(customerId: string, cardId: string): Promise<Reply> {
    const ok = await this.#d.store.deleteIfExists(["card", customerId, cardId]);
    if (!ok) throw PaymentsError.notFound("cardId");
    return { status: 200, body: { status: "success", message: "Card deleted.", code: "200" } };
  }

  // ------------------------------------------------------ bank accounts

  /** POST /customers/{customerId}/bank-accounts */
  async createBankAccount(customerId: string, raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(BankAccountInput, asObject(raw));
    const summary = await bankSummaryFrom(input, "");
    return reply(
      await this.#d.store.change({
        requestId,
        op: `createBankAccount:${customerId}`,
        plan: async () => {
          const iso = this.#iso();
          const record: BankAccountRecord = {
            ...summary,
            id: this.#d.ids("ba_"),
            customerId,
            created: iso,
            updated: iso,
            default: input.default ?? false,
          };
          const key = ["bank", customerId, record.id];
          const demoted = record.default
            ? await this.#demoteDefaults<BankAccountRecord>(["bank", customerId], iso)
            : { checks: [], sets: [] };
          return {
            checks: [{ key, versionstamp: null }, ...demoted.checks],
            sets: [{ key, value: record }, ...demoted.sets],
            status: 201,
            body: bankAccountView(record, true),
          };
        },
      }),
    );
  }

  /** GET /customers/{customerId}/bank-accounts/{bankAccountId} */
  async getBankAccount(customerId: string, id: string): Promise<Reply> {
    const e = await this.#d.store.get<BankAccountRecord>(["bank", customerId, id]);
    if (!e.value) throw PaymentsError.notFound("bankAccountId");
    return { status: 200, body: bankAccountView(e.value) };
  }

  /** GET /customers/{customerId}/bank-accounts (newest first) */
  async listBankAccounts(customerId: string): Promise<Reply> {
    const list = await this.#d.store.listNewestFirst<BankAccountRecord>(["bank", customerId]);
    return { status: 200, body: list.map((r) => bankAccountView(r)) };
  }

  /** DELETE /customers/{customerId}/bank-accounts/{bankAccountId} */
  async deleteBankAccount(customerId: string, id: string): Promise<Reply> {
    const ok = await this.#d.store.deleteIfExists(["bank", customerId, id]);
    if (!ok) throw PaymentsError.notFound("bankAccountId");
    return { status: 200, body: { status: "success", message: "Bank account deleted." } };
  }

  // ------------------------------------------------------------- tokens

  /** POST /payments/tokens (public): a card or bank account → one-time token. */
  async createToken(raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(TokenInput, asObject(raw));
    if (!input.card && !input.bankAccount) throw PaymentsError.required("card");
    if (input.card && input.bankAccount) {
      throw PaymentsError.invalid("bankAccount");
    }
    const now = this.#d.now();
    const card = input.card ? await cardSummaryFrom(input.card, now, "card") : undefined;
    const bank = input.bankAccount
      ? await bankSummaryFrom(input.bankAccount, "bankAccount")
      : undefined;
    return reply(
      await this.#d.store.change({
        requestId,
        op: "createToken",
        plan: () => {
          const record: TokenRecord = {
            id: this.#d.ids("tok_"),
            type: card ? "card" : "bank_account",
            created: now.toISOString(),
            expiresAt: now.getTime() + TOKEN_TTL_MS,
            ...(card ? { card } : {}),
            ...(bank ? { bank } : {}),
          };
          const key = ["token", record.id];
          return Promise.resolve({
            checks: [{ key, versionstamp: null }],
            sets: [{ key, value: record, expireIn: TOKEN_TTL_MS }],
            status: 201,
            body: tokenView(record),
          });
        },
      }),
    );
  }

  /** Read a live token of the wanted type or throw `token is invalid.`. */
  async #liveToken(
    id: string,
    type: TokenRecord["type"],
  ): Promise<Deno.KvEntry<TokenRecord>> {
    const e = await this.#d.store.get<TokenRecord>(["token", id]);
    if (
      e.versionstamp === null || e.value.type !== type ||
      e.value.expiresAt <= this.#d.now().getTime()
    ) {
      throw PaymentsError.invalid("token");
    }
    return e;
  }

  // ------------------------------------------------------------ charges

  /**
   * POST /payments/charges. Without a Request-Id one is generated; either way
   * it is returned in the `Request-Id` header and addresses the void.
   */
  async createCharge(raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(ChargeInput, asObject(raw));
    if (!input.card && !input.token) throw PaymentsError.required("card");
    if (input.card && input.token) {
      throw PaymentsError.invalid("token");
    }
    const amount = amountOf(input.amount, "amount")!;
    const now = this.#d.now();
    const rid = requestId ?? this.#d.ids("req_");
    let cardFromInput: CardSummary | undefined;
    if (input.card) {
      this.#applyTrigger(input.card.name, "card.number");
      cardFromInput = await cardSummaryFrom(input.card, now, "card");
    }
    try {
      return reply(
        await this.#d.store.change({
          requestId: rid,
          op: "createCharge",
          plan: async (attempt) => {
            // The Request-Id must not address another charge; the check in the
            // commit enforces it, and a retry after a failed commit tells why.
            const checks: Deno.AtomicCheck[] = [{ key: ["charge_req", rid], versionstamp: null }];
            const deletes: Deno.KvKey[] = [];
            let card = cardFromInput;
            if (!card) {
              const tok = await this.#liveToken(input.token!, "card");
              this.#applyTrigger(tok.value.card!.name, "token");
              card = tok.value.card!;
              checks.push(tok);
              deletes.push(tok.key);
            }
            if (attempt > 0) {
              const prior = await this.#d.store.get(["charge_req", rid]);
              if (prior.versionstamp !== null) throw PaymentsError.invalid("requestId");
            }
            const declined = triggerOf(card.name) === "decline";
            const iso = now.toISOString();
            const record: ChargeRecord = {
              id: this.#d.ids("ch_"),
              requestId: rid,
              created: iso,
              updated: iso,
              amount,
              currency: input.currency,
              description: input.description ?? "",
              capture: input.capture ?? false,
              status: declined ? "DECLINED" : input.capture ? "CAPTURED" : "AUTHORIZED",
              authCode: declined ? "" : randomCode(6, this.#d.random),
              card,
              context: contextFrom(input.context),
              cardOnFile: input.cardOnFile ?? false,
              refunded: 0,
            };
            checks.push({ key: ["charge", record.id], versionstamp: null });
            const view = chargeViewOf(record);
            return {
              checks,
              sets: [
                { key: ["charge", record.id], value: record },
                { key: ["charge_req", rid], value: record.id },
              ],
              deletes,
              // The charge is new (its key is checked absent): no cache holds it.
              newViews: true,
              status: 201,
              body: view.body,
              json: view.json,
              headers: { "Request-Id": rid },
            };
          },
        }),
      );
    } catch (err) {
      // Outcome unknown (the store did not answer): the client needs the
      // Request-Id, generated or not, to retry (a replay if it was applied).
      if (err instanceof PaymentsError && err.status === 503) {
        err.headers = { ...err.headers, "Request-Id": rid };
      }
      throw err;
    }
  }

  #applyTrigger(name: string | undefined, numberPath: string): void {
    const t = triggerOf(name);
    if (t === "invalid_number") throw PaymentsError.invalid(numberPath);
    if (t === "system_error") throw PaymentsError.system("emulated processor failure (10201)");
  }

  /** GET /payments/charges/{chargeId} */
  async getCharge(id: string): Promise<Reply> {
    // Through the view cache, which keeps the response text: a repeated read
    // decodes and builds nothing.
    const json = await this.#d.store.getView(["charge", id], chargeJson);
    if (json === null) throw PaymentsError.notFound("chargeId");
    return { status: 200, body: undefined, json };
  }

  async #chargeEntry(id: string): Promise<Deno.KvEntry<ChargeRecord>> {
    const e = await this.#d.store.get<ChargeRecord>(["charge", id]);
    if (e.versionstamp === null) throw PaymentsError.notFound("chargeId");
    return e;
  }

  /** POST /payments/charges/{chargeId}/capture */
  async capture(id: string, raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(AdjustInput, asObject(raw));
    const amount = amountOf(input.amount, "amount");
    return reply(
      await this.#d.store.change({
        requestId,
        op: `capture:${id}`,
        plan: async () => {
          const e = await this.#chargeEntry(id);
          const next = capture(e.value, {
            amount,
            description: input.description ?? "",
            context: contextFrom(input.context),
            now: this.#iso(),
          });
          const view = chargeViewOf(next);
          return {
            checks: [e],
            sets: [{ key: ["charge", id], value: next }],
            deletes: [legacyViewKey(id)],
            status: 200,
            body: view.body,
            json: view.json,
          };
        },
      }),
    );
  }

  /** POST /payments/charges/{chargeId}/refunds */
  async refund(id: string, raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(AdjustInput, asObject(raw));
    const amount = amountOf(input.amount, "amount");
    return reply(
      await this.#d.store.change({
        requestId,
        op: `refund:${id}`,
        plan: async () => {
          const e = await this.#chargeEntry(id);
          const iso = this.#iso();
          const context = contextFrom(input.context);
          const out = refund(e.value, {
            amount,
            description: input.description ?? "",
            context,
            now: iso,
          });
          const record: AdjustmentRecord = {
            id: this.#d.ids("rf_"),
            chargeId: id,
            type: "REFUND",
            status: "ISSUED",
            amount: out.amount,
            created: iso,
            description: input.description ?? "",
            context,
          };
          return {
            checks: [e],
            sets: [
              { key: ["charge", id], value: out.charge },
              { key: ["refund", id, record.id], value: record },
            ],
            deletes: [legacyViewKey(id)],
            status: 201,
            body: refundView(record),
          };
        },
      }),
    );
  }

  /** GET /payments/charges/{chargeId}/refunds/{refundId} */
  async getRefund(chargeId: string, refundId: string): Promise<Reply> {
    const e = await this.#d.store.get<AdjustmentRecord>(["refund", chargeId, refundId]);
    if (!e.value) throw PaymentsError.notFound("refundId");
    return { status: 200, body: refundView(e.value) };
  }

  /** POST /payments/txn-requests/{chargeRequestId}/void */
  async voidByRequest(chargeRequestId: string, raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(VoidInput, asObject(raw));
    return reply(
      await this.#d.store.change({
        requestId,
        op: `void:${chargeRequestId}`,
        plan: async () => {
          const ref = await this.#d.store.get<string>(["charge_req", chargeRequestId]);
          if (ref.value === null) throw PaymentsError.notFound("chargeRequestId");
          const e = await this.#chargeEntry(ref.value);
          const iso = this.#iso();
          const out = voidCharge(e.value, iso);
          const record: AdjustmentRecord = {
            id: this.#d.ids("vd_"),
            chargeId: e.value.id,
            type: "VOID",
            status: "ISSUED",
            amount: out.amount,
            created: iso,
            description: input.description ?? "",
            context: contextFrom(input.context),
          };
          return {
            checks: [e],
            sets: [
              { key: ["charge", e.value.id], value: out.charge },
              { key: ["void", record.id], value: record },
            ],
            deletes: [legacyViewKey(e.value.id)],
            status: 201,
            body: voidView(record),
          };
        },
      }),
    );
  }

  // ------------------------------------------------------------ e-checks

  /** POST /payments/echecks (lower camelCase or capitalised fields) */
  async createECheck(raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(ECheckInput, lowerFirstKeys(asObject(raw), 3));
    if (!input.bankAccount && !input.token) throw PaymentsError.required("bankAccount");
    if (input.bankAccount && input.token) {
      throw PaymentsError.invalid("token");
    }
    const amount = amountOf(input.amount, "amount")!;
    const fromInput = input.bankAccount
      ? await bankSummaryFrom(input.bankAccount, "bankAccount")
      : undefined;
    return reply(
      await this.#d.store.change({
        requestId,
        op: "createECheck",
        plan: async () => {
          const checks: Deno.AtomicCheck[] = [];
          const deletes: Deno.KvKey[] = [];
          let bank: BankSummary | undefined = fromInput;
          if (!bank) {
            const tok = await this.#liveToken(input.token!, "bank_account");
            bank = tok.value.bank!;
            checks.push(tok);
            deletes.push(tok.key);
          }
          const record: ECheckRecord = {
            id: this.#d.ids("ec_"),
            created: this.#iso(),
            amount,
            authCode: randomCode(6, this.#d.random),
            bank,
            checkNumber: input.checkNumber ?? "",
            context: contextFrom(input.context),
            description: input.description ?? "",
            paymentMode: input.paymentMode,
            status: "PENDING",
          };
          checks.push({ key: ["echeck", record.id], versionstamp: null });
          return {
            checks,
            sets: [{ key: ["echeck", record.id], value: record }],
            deletes,
            status: 201,
            body: echeckView(record),
          };
        },
      }),
    );
  }

  /** GET /payments/echecks/{echeckId} */
  async getECheck(id: string): Promise<Reply> {
    const e = await this.#d.store.get<ECheckRecord>(["echeck", id]);
    if (!e.value) throw PaymentsError.notFound("echeckId");
    return { status: 200, body: echeckView(e.value) };
  }
}
