/**
 * Sample data the SDK tests send: the personal checking account of
 * Intuit's SDK samples, written the same way by the Java and npm SDKs.
 *
 * @module
 */

/** A personal checking account (routing number 322079353). */
export const SAMPLE_BANK_ACCOUNT = {
  name: "Fname LName",
  routingNumber: "322079353",
  accountNumber: "11000000333456781",
  accountType: "PERSONAL_CHECKING",
  phone: "1234567890",
} as const;
