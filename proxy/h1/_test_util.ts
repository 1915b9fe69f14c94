/**
 * Test helpers: bytes from text, and a parser run reduced to a comparable
 * summary (content joined, whatever the reads it came in).
 *
 * @module
 */

import { H1ResponseParser } from "./response_parser.ts";
import type { H1Event, H1ParserOptions } from "./types.ts";

/** Octets of `s`, one per character (latin1). */
export function bytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** `s` split into CRLF-terminated lines from `\n`-separated text. */
export function crlf(s: string): string {
  return s.replaceAll("\n", "\r\n");
}

/** A parser run: events with their content joined, and the parser's final verdicts. */
export interface Summary {
  /** Every event but `data` and `excess`, in order; content and excess counted apart. */
  events: Array<Exclude<H1Event, { type: "data" } | { type: "excess" }>>;
  /** The content, joined, as latin1 text. */
  body: string;
  /** Bytes reported as excess. */
  excess: number;
  /** The parser's `reusable` at the end. */
  reusable: boolean;
  /** After an `upgrade`: its `rest` and every byte given later (the new protocol's), as text. */
  upgraded: string;
}

/** Feeds `parts` to a new parser for `method` (then `eof` when `eof`), and summarizes. */
export function run(
  method: string,
  parts: readonly Uint8Array[],
  options: { eof?: boolean; parser?: H1ParserOptions } = {},
): Summary {
  const p = new H1ResponseParser(method, options.parser);
  const all: H1Event[] = [];
  let later = "";
  for (const part of parts) {
    if (all.some((e) => e.type === "upgrade")) later += String.fromCharCode(...part);
    all.push(...p.push(part));
  }
  if (options.eof) all.push(...p.eof());
  const summary = summarize(all, p.reusable);
  summary.upgraded += later;
  return summary;
}

/** Feeds the whole of `text` at once. */
export function runText(
  method: string,
  text: string,
  options: { eof?: boolean; parser?: H1ParserOptions } = {},
): Summary {
  return run(method, [bytes(text)], options);
}

/** Events reduced to a summary (`upgrade`'s `rest` moves to `upgraded`). */
export function summarize(all: readonly H1Event[], reusable: boolean): Summary {
  const out: Summary = { events: [], body: "", excess: 0, reusable, upgraded: "" };
  for (const e of all) {
    if (e.type === "data") out.body += String.fromCharCode(...e.data);
    else if (e.type === "excess") out.excess += e.length;
    else if (e.type === "upgrade") {
      out.upgraded += String.fromCharCode(...e.rest);
      out.events.push({ ...e, rest: new Uint8Array(0) });
    } else out.events.push(e);
  }
  return out;
}

/** `input` cut at each of `cuts` (sorted, deduplicated, inside the input). */
export function cutAt(input: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => Math.min(Math.max(c, 0), input.length)))]
    .sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const c of points) {
    out.push(input.subarray(from, c));
    from = c;
  }
  out.push(input.subarray(from));
  return out;
}

/** The error event of a summary, or undefined. */
export function errorOf(s: Summary): { kind: string; reason: string } | undefined {
  const e = s.events.find((e) => e.type === "error");
  return e?.type === "error" ? { kind: e.kind, reason: e.reason } : undefined;
}
