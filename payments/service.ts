/**
 * Use cases of the payments sandbox: validation, rules (domain/) and
 * persistence (store/) glued together. Routes call these and only translate
 * HTTP; every method returns the status and JSON body to send.
 *
 * @module
 */
import {
  BankAccountInput,
  CardInput,
  ChargeInput,
  ECheckInput,
  FromTokenInput,
  TokenInput,
  VoidInput,
} from "../shared/payments_schemas.ts";
import { capture, issued, refund, refundECheck, voidCharge } from "./domain/charge_rules.ts";
import { PaymentsError } from "./domain/errors.ts";
import { type IdGenerator, randomCode } from "./domain/ids.ts";
import {
  adjustmentOf,
  bankSummaryFrom,
  cardSummaryFrom,
  contextFrom,
  flag,
  tokenProblem,
} from "./domain/intake.ts";
import { amountAt } from "./domain/money.ts";
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
import { lowerFirstKeys, oneOf, validate } from "./domain/validate.ts";
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
import { keys } from "./store/keys.ts";
import type { CommitPlan, PaymentsStore } from "./store/kv_store.ts";
import type { Reply } from "./store/reply.ts";

export type { Reply };

/** Lifetime of a one-time token. */
export const TOKEN_TTL_MS = 15 * 60 * 1000;

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

/** How each kind of customer-owned payment method is stored. */
const OWNED = {
  card: { op: "createCard", idPrefix: "card_", key: keys.card, prefix: keys.cards },
  bankAccount: {
    op: "createBankAccount",
    idPrefix: "ba_",
    key: keys.bankAccount,
    prefix: keys.bankAccounts,
  },
} as const;

/** A plan that writes nothing besides what it is added to. */
const NO_WRITES: Pick<CommitPlan, "checks" | "sets"> = { checks: [], sets: [] };

/** The response of get-charge, as JSON text (what the view cache keeps). */
function chargeJson(record: unknown): string {
  return JSON.stringify(chargeView(record as ChargeRecord));
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
   * Commit a write made by the request with body `raw` and this Request-Id
   * (see `PaymentsStore.change`: a repeat of the identical request replays).
   */
  #change(
    op: string,
    raw: unknown,
    requestId: string | undefined,
    plan: (attempt: number) => Promise<CommitPlan>,
  ): Promise<Reply> {
    return this.#d.store.change({ requestId, op, body: raw, plan });
  }

  /** 200 with the view of a stored resource, or 404 naming the path parameter `param`. */
  async #read<T>(key: Deno.KvKey, param: string, view: (r: T) => unknown): Promise<Reply> {
    return { status: 200, body: view((await this.#d.store.require<T>(key, param)).value) };
  }

  /**
   * Store a new card or bank account of a customer; with `default: true`
   * it clears `default` on the customer's others in the same commit.
   */
  #createOwned<R extends CardRecord | BankAccountRecord>(
    kind: keyof typeof OWNED,
    customerId: string,
    raw: unknown,
    requestId: string | undefined,
    fields: Omit<R, "id" | "customerId" | "created" | "updated">,
    view: (r: R) => unknown,
  ): Promise<Reply> {
    const owned = OWNED[kind];
    return this.#change(`${owned.op}:${customerId}`, raw, requestId, async () => {
      const iso = this.#iso();
      const id = this.#d.ids(owned.idPrefix);
      const record = { ...fields, id, customerId, created: iso, updated: iso } as R;
      const key = owned.key(customerId, id);
      const demoted = record.default
        ? await this.#d.store.demoteDefaults<R>(owned.prefix(customerId), iso)
        : NO_WRITES;
      return {
        checks: [{ key, versionstamp: null }, ...demoted.checks],
        sets: [{ key, value: record }, ...demoted.sets],
        status: 201,
        body: view(record),
      };
    });
  }

  // ------------------------------------------------------------- cards

  /** POST /customers/{customerId}/cards */
  async createCard(customerId: string, raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(CardInput, raw);
    const summary = await cardSummaryFrom(input, this.#d.now(), "");
    return this.#createOwned<CardRecord>("card", customerId, raw, requestId, {
      ...summary,
      default: flag(input.default),
      isBusiness: flag(input.isBusiness),
      ...(input.commercialCardCode ? { commercialCardCode: input.commercialCardCode } : {}),
    }, cardCreatedView);
  }

  /**
   * POST /customers/{customerId}/cards/createFromToken: store the card a
   * one-time card token stands for; the token is spent in the same commit.
   */
  createCardFromToken(customerId: string, raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(FromTokenInput, raw);
    return this.#createOwnedFromToken("card", customerId, raw, requestId, input.value);
  }

  /**
   * POST /customers/{customerId}/bank-accounts/createFromToken: store the
   * bank account a one-time bank-account token stands for (token spent in
   * the same commit).
   */
  createBankAccountFromToken(
    customerId: string,
    raw: unknown,
    requestId?: string,
  ): Promise<Reply> {
    const input = validate(FromTokenInput, raw);
    return this.#createOwnedFromToken("bankAccount", customerId, raw, requestId, input.value);
  }

  #createOwnedFromToken(
    kind: keyof typeof OWNED,
    customerId: string,
    raw: unknown,
    requestId: string | undefined,
    value: string,
  ): Promise<Reply> {
    const owned = OWNED[kind];
    return this.#change(`${owned.op}FromToken:${customerId}`, raw, requestId, async () => {
      const spent = { checks: [] as Deno.AtomicCheck[], deletes: [] as Deno.KvKey[] };
      const token = await this.#spendToken(value, kind === "card" ? "card" : "bank_account", spent);
      const iso = this.#iso();
      const id = this.#d.ids(owned.idPrefix);
      const common = { id, customerId, created: iso, updated: iso, default: false };
      const record: CardRecord | BankAccountRecord = kind === "card"
        ? { ...token.card!, ...common, isBusiness: false }
        : { ...token.bank!, ...common };
      const key = owned.key(customerId, id);
      return {
        checks: [...spent.checks, { key, versionstamp: null }],
        sets: [{ key, value: record }],
        deletes: spent.deletes,
        status: 201,
        body: kind === "card"
          ? cardCreatedView(record as CardRecord)
          : bankAccountView(record as BankAccountRecord, true),
      };
    });
  }

  /** GET /customers/{customerId}/cards/{cardId} */
  getCard(customerId: string, cardId: string): Promise<Reply> {
    return this.#read(keys.card(customerId, cardId), "cardId", cardView);
  }

  /** GET /customers/{customerId}/cards (newest first; at most `count`) */
  async listCards(customerId: string, count?: number): Promise<Reply> {
    const cards = await this.#d.store.listNewestFirst<CardRecord>(keys.cards(customerId), count);
    return { status: 200, body: cards.map(cardView) };
  }

  /** DELETE /customers/{customerId}/cards/{cardId} */
  async deleteCard(customerId: string, cardId: string): Promise<Reply> {
    const ok = await this.#d.store.deleteIfExists(keys.card(customerId, cardId));
    if (!ok) throw PaymentsError.notFound("cardId");
    return { status: 200, body: { status: "success", message: "Card deleted.", code: "200" } };
  }

  // ------------------------------------------------------ bank accounts

  /** POST /customers/{customerId}/bank-accounts */
  async createBankAccount(customerId: string, raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(BankAccountInput, raw);
    const summary = await bankSummaryFrom(input, "");
    return this.#createOwned<BankAccountRecord>(
      "bankAccount",
      customerId,
      raw,
      requestId,
      { ...summary, default: flag(input.default) },
      (r) => bankAccountView(r, true),
    );
  }

  /** GET /customers/{customerId}/bank-accounts/{bankAccountId} */
  getBankAccount(customerId: string, id: string): Promise<Reply> {
    return this.#read(keys.bankAccount(customerId, id), "bankAccountId", bankAccountView);
  }

  /** GET /customers/{customerId}/bank-accounts (newest first; at most `count`) */
  async listBankAccounts(customerId: string, count?: number): Promise<Reply> {
    const list = await this.#d.store.listNewestFirst<BankAccountRecord>(
      keys.bankAccounts(customerId),
      count,
    );
    return { status: 200, body: list.map((r) => bankAccountView(r)) };
  }

  /** DELETE /customers/{customerId}/bank-accounts/{bankAccountId} */
  async deleteBankAccount(customerId: string, id: string): Promise<Reply> {
    const ok = await this.#d.store.deleteIfExists(keys.bankAccount(customerId, id));
    if (!ok) throw PaymentsError.notFound("bankAccountId");
    return { status: 200, body: { status: "success", message: "Bank account deleted." } };
  }

  // ------------------------------------------------------------- tokens

  /** POST /payments/tokens (public): a card or bank account → one-time token. */
  async createToken(raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(TokenInput, raw);
    oneOf(input, "card", "bankAccount");
    const now = this.#d.now();
    const card = input.card ? await cardSummaryFrom(input.card, now, "card") : undefined;
    const bank = input.bankAccount
      ? await bankSummaryFrom(input.bankAccount, "bankAccount")
      : undefined;
    return this.#change("createToken", raw, requestId, () => {
      const record: TokenRecord = {
        // The token stands in for the card: 130 random bits, not a time-ordered id.
        id: `tok_${randomCode(26, this.#d.random)}`,
        type: card ? "card" : "bank_account",
        created: now.toISOString(),
        expiresAt: now.getTime() + TOKEN_TTL_MS,
        ...(card ? { card } : {}),
        ...(bank ? { bank } : {}),
      };
      const key = keys.token(record.id);
      return Promise.resolve({
        checks: [{ key, versionstamp: null }],
        sets: [{ key, value: record, expireIn: TOKEN_TTL_MS }],
        status: 201,
        body: tokenView(record),
      });
    });
  }

  /**
   * Read a live token of the wanted type (its `value`, the same string as
   * its id) or throw `token is invalid.`; the plan then checks it and
   * deletes it in its commit (a token pays once).
   */
  async #spendToken(
    value: string,
    type: TokenRecord["type"],
    plan: Pick<CommitPlan, "checks"> & { deletes: Deno.KvKey[] },
  ): Promise<TokenRecord> {
    const e = await this.#d.store.get<TokenRecord>(keys.token(value));
    const rule = tokenProblem(e.value, type, this.#d.now().getTime());
    if (rule || e.versionstamp === null) throw PaymentsError.invalid("token", undefined, rule);
    plan.checks.push(e);
    plan.deletes.push(e.key);
    return e.value;
  }

  // ------------------------------------------------------------ charges

  /**
   * POST /payments/charges. Without a Request-Id one is generated; either way
   * it is returned in the `Request-Id` header and addresses the void.
   */
  async createCharge(raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(ChargeInput, raw);
    oneOf(input, "card", "token");
    const amount = amountAt(input.amount, "amount")!;
    const now = this.#d.now();
    const rid = requestId ?? this.#d.ids("req_");
    let cardFromInput: CardSummary | undefined;
    if (input.card) {
      this.#applyTrigger(input.card.name, "card.number");
      cardFromInput = await cardSummaryFrom(input.card, now, "card");
    }
    try {
      return await this.#change("createCharge", raw, rid, async (attempt) => {
        // The Request-Id must not address another charge; the check in the
        // commit enforces it, and a retry after a failed commit tells why.
        const spent = {
          checks: [{ key: keys.chargeRequest(rid), versionstamp: null }] as Deno.AtomicCheck[],
          deletes: [] as Deno.KvKey[],
        };
        let card = cardFromInput;
        if (!card) {
          card = (await this.#spendToken(input.token!, "card", spent)).card!;
          this.#applyTrigger(card.name, "token");
        }
        if (attempt > 0) {
          const prior = await this.#d.store.get(keys.chargeRequest(rid));
          if (prior.versionstamp !== null) {
            throw PaymentsError.invalid(
              "requestId",
              undefined,
              "this Request-Id created another charge (it addresses that charge's void)",
            );
          }
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
          capture: flag(input.capture),
          status: declined ? "DECLINED" : flag(input.capture) ? "CAPTURED" : "AUTHORIZED",
          authCode: declined ? "" : randomCode(6, this.#d.random),
          card,
          context: contextFrom(input.context),
          cardOnFile: flag(input.cardOnFile),
          refunded: 0,
        };
        const key = keys.charge(record.id);
        return {
          checks: [...spent.checks, { key, versionstamp: null }],
          sets: [{ key, value: record }, { key: keys.chargeRequest(rid), value: record.id }],
          deletes: spent.deletes,
          // The charge is new (its key is checked absent): no cache holds it.
          newViews: true,
          status: 201,
          body: chargeView(record),
          headers: { "Request-Id": rid },
        };
      });
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
    if (t === "invalid_number") {
      throw PaymentsError.invalid(numberPath, undefined, "sandbox trigger emulate=10301");
    }
    if (t === "system_error") throw PaymentsError.system("emulated processor failure (10201)");
  }

  /** GET /payments/charges/{chargeId} */
  async getCharge(id: string): Promise<Reply> {
    // Through the view cache, which keeps the response text: a repeated read
    // decodes and builds nothing.
    const json = await this.#d.store.getView(keys.charge(id), chargeJson);
    if (json === null) throw PaymentsError.notFound("chargeId");
    return { status: 200, body: undefined, json };
  }

  /**
   * A change of an existing charge (capture, refund, void): `next` turns
   * the charge's fresh entry into the new charge, the records written with
   * it and the reply. The commit checks the charge's versionstamp (a
   * concurrent change makes it plan again) and bumps the view epoch.
   */
  #changeCharge(
    op: string,
    raw: unknown,
    requestId: string | undefined,
    chargeId: string | (() => Promise<string>),
    next: (
      charge: ChargeRecord,
      iso: string,
    ) => { charge: ChargeRecord; sets?: CommitPlan["sets"]; status: number; body: unknown },
  ): Promise<Reply> {
    return this.#change(op, raw, requestId, async () => {
      const id = typeof chargeId === "string" ? chargeId : await chargeId();
      const e = await this.#d.store.require<ChargeRecord>(keys.charge(id), "chargeId");
      const out = next(e.value, this.#iso());
      return {
        checks: [e],
        sets: [{ key: e.key, value: out.charge }, ...out.sets ?? []],
        deletes: [keys.legacyChargeView(e.value.id)],
        status: out.status,
        body: out.body,
      };
    });
  }

  /** POST /payments/charges/{chargeId}/capture */
  capture(id: string, raw: unknown, requestId?: string): Promise<Reply> {
    const adj = adjustmentOf(raw);
    return this.#changeCharge(`capture:${id}`, raw, requestId, id, (c, now) => {
      const charge = capture(c, { ...adj, now });
      return { charge, status: 200, body: chargeView(charge) };
    });
  }

  /** POST /payments/charges/{chargeId}/refunds */
  refund(id: string, raw: unknown, requestId?: string): Promise<Reply> {
    const adj = adjustmentOf(raw);
    return this.#changeCharge(`refund:${id}`, raw, requestId, id, (c, now) => {
      const refundId = this.#d.ids("rf_");
      const out = refund(c, { ...adj, now }, refundId);
      const record = issued("REFUND", refundId, id, out.amount, now, adj);
      return {
        charge: out.charge,
        sets: [{ key: keys.refund(id, refundId), value: record }],
        status: 201,
        body: refundView(record),
      };
    });
  }

  /** GET /payments/charges/{chargeId}/refunds/{refundId} */
  getRefund(chargeId: string, refundId: string): Promise<Reply> {
    return this.#read(keys.refund(chargeId, refundId), "refundId", refundView);
  }

  /** GET /payments/charges/{chargeId}/refunds (newest first; 404 for an unknown charge) */
  async listRefunds(chargeId: string): Promise<Reply> {
    await this.#d.store.require(keys.charge(chargeId), "chargeId");
    const list = await this.#d.store.listNewestFirst<AdjustmentRecord>(keys.refunds(chargeId));
    return { status: 200, body: list.map(refundView) };
  }

  /** POST /payments/txn-requests/{chargeRequestId}/void */
  voidByRequest(chargeRequestId: string, raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(VoidInput, raw);
    const chargeId = async () =>
      (await this.#d.store.require<string>(keys.chargeRequest(chargeRequestId), "chargeRequestId"))
        .value;
    return this.#changeCharge(`void:${chargeRequestId}`, raw, requestId, chargeId, (c, now) => {
      const out = voidCharge(c, now);
      const record = issued("VOID", this.#d.ids("vd_"), c.id, out.amount, now, {
        description: input.description ?? "",
        context: contextFrom(input.context),
      });
      return {
        charge: out.charge,
        sets: [{ key: keys.void(record.id), value: record }],
        status: 201,
        body: voidView(record),
      };
    });
  }

  // ------------------------------------------------------------ e-checks

  /** POST /payments/echecks (lower camelCase or capitalised fields) */
  async createECheck(raw: unknown, requestId?: string): Promise<Reply> {
    const input = validate(ECheckInput, lowerFirstKeys(raw, 3));
    oneOf(input, "bankAccount", "token");
    const amount = amountAt(input.amount, "amount")!;
    const fromInput = input.bankAccount
      ? await bankSummaryFrom(input.bankAccount, "bankAccount")
      : undefined;
    return this.#change("createECheck", raw, requestId, async () => {
      const spent = { checks: [] as Deno.AtomicCheck[], deletes: [] as Deno.KvKey[] };
      const bank: BankSummary = fromInput ??
        (await this.#spendToken(input.token!, "bank_account", spent)).bank!;
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
      const key = keys.echeck(record.id);
      return {
        checks: [...spent.checks, { key, versionstamp: null }],
        sets: [{ key, value: record }],
        deletes: spent.deletes,
        status: 201,
        body: echeckView(record),
      };
    });
  }

  /** GET /payments/echecks/{echeckId} */
  getECheck(id: string): Promise<Reply> {
    return this.#read(keys.echeck(id), "echeckId", echeckView);
  }

  /**
   * POST /payments/echecks/{echeckId}/refunds: total ≤ the e-check's
   * amount. The commit checks the e-check's versionstamp (a concurrent
   * refund makes it plan again), so refunds never exceed what is left.
   */
  refundECheck(id: string, raw: unknown, requestId?: string): Promise<Reply> {
    const adj = adjustmentOf(raw);
    return this.#change(`refundECheck:${id}`, raw, requestId, async () => {
      const e = await this.#d.store.require<ECheckRecord>(keys.echeck(id), "echeckId");
      const now = this.#iso();
      const refundId = this.#d.ids("rf_");
      const out = refundECheck(e.value, { ...adj, now }, refundId);
      const record = issued("REFUND", refundId, id, out.amount, now, adj);
      return {
        checks: [e],
        sets: [
          { key: e.key, value: out.echeck },
          { key: keys.echeckRefund(id, refundId), value: record },
        ],
        status: 201,
        body: refundView(record),
      };
    });
  }

  /** GET /payments/echecks/{echeckId}/refunds/{refundId} */
  getECheckRefund(echeckId: string, refundId: string): Promise<Reply> {
    return this.#read(keys.echeckRefund(echeckId, refundId), "refundId", refundView);
  }
}
