import * as h3 from "./mod.ts";
import assert from "node:assert/strict";

Deno.test("mod.ts re-exports the codec's public surface", () => {
  for (
    const name of [
      "H3Code",
      "H3Error",
      "MalformedMessageError",
      "NEED_MORE",
      "h3CodeName",
      "decodeVarint",
      "encodeVarint",
      "varintLength",
      "writeVarint",
      "SettingId",
      "decodeSettings",
      "encodeSettings",
      "FrameType",
      "encodeFrame",
      "encodeFrameHeader",
      "encodeSettingsFrame",
      "encodeGoaway",
      "FrameDecoder",
      "StreamType",
      "decodeStreamType",
      "classifyUniStream",
      "ControlStreamParser",
      "RequestStreamParser",
      "validateRequestFields",
      "validateTrailerFields",
      "BodyLengthTracker",
    ]
  ) {
    assert.ok(name in h3, `missing export ${name}`);
  }
});
