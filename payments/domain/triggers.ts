/**
 * Sandbox triggers: a card `name` containing `emulate=<code>` forces an
 * outcome on a charge.
 *
 * | code | outcome |
 * |---|---|
 * | 10401 | charge created (201) with status DECLINED |
 * | 10301 | 400 PMT-4000 on `card.number` |
 * | 10201 | 502 PMT-6000 system error |
 *
 * @module
 */

/** Outcome forced by a trigger. */
export type Trigger = "decline" | "invalid_number" | "system_error";

/** Read the trigger out of a cardholder name, if any. */
export function triggerOf(name: string | undefined): Trigger | undefined {
  const m = /emulate=(\d{5})/.exec(name ?? "");
  switch (m?.[1]) {
    case "10401":
      return "decline";
    case "10301":
      return "invalid_number";
    case "10201":
      return "system_error";
    default:
      return undefined;
  }
}
