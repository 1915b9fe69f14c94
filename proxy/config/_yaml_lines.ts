/**
 * Internal: maps a key path of the parsed configuration back to a line of the
 * YAML source, using the node ranges that `yaml` keeps.
 * @module
 */
import { type Document, isAlias, isMap, isScalar, isSeq, type LineCounter } from "yaml";

/** A key path as zod reports it: map keys and list indexes. */
export type KeyPath = readonly PropertyKey[];

function lineAt(node: unknown, lines: LineCounter): number | undefined {
  const range = (node as { range?: [number, number, number] } | null)?.range;
  return range ? lines.linePos(range[0]).line : undefined;
}

function keyText(key: unknown): string {
  return isScalar(key) ? String(key.value) : String(key);
}

/**
 * Returns the 1-based line of the deepest node of `path` found in `doc`: the
 * key's line for a map entry, the item's line for a list item. When part of
 * the path is missing (a required key left out) the last node found gives the
 * line, so a missing key points at its parent. Aliases are followed.
 */
export function lineOfPath(doc: Document, lines: LineCounter, path: KeyPath): number | undefined {
  let node: unknown = doc.contents;
  let line = lineAt(node, lines) ?? 1;
  for (const segment of path) {
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      const pair = node.items.find((p) => keyText(p.key) === String(segment));
      if (pair === undefined) break;
      line = lineAt(pair.key, lines) ?? line;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === "number") {
      const item = node.items[segment];
      if (item === undefined) break;
      line = lineAt(item, lines) ?? line;
      node = item;
    } else {
      break;
    }
  }
  return line;
}

const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

/**
 * Formats a key path in dotted form: `upstream.api.backends[1].address`.
 * Map keys that are not plain words are quoted: `upstream["api v2"].route`.
 * The empty path is the empty string.
 */
export function formatPath(path: KeyPath): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else {
      const key = String(segment);
      if (PLAIN_KEY.test(key)) out += out === "" ? key : `.${key}`;
      else out += `[${JSON.stringify(key)}]`;
    }
  }
  return out;
}
