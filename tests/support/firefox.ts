/**
 * Headless Firefox ESR (Debian packages `firefox-esr` and `libnss3-tools`) for
 * browser tests: a fresh profile that trusts a test CA (added to the profile's
 * NSS database with `certutil`), sends every `https://` request for one
 * `host:port` straight over HTTP/3 to that port (no TCP first, no Alt-Svc
 * discovery), and reaches nothing but loopback.
 *
 * Firefox has no `--dump-dom`: the page under test reports back itself (for
 * example with a `fetch` POST that the backend receives), and the caller
 * passes a promise that settles then as {@link FirefoxOptions.until}.
 *
 * @module
 */
import { testCerts } from "./proxy_process.ts";

/** Options of {@link firefoxRun}. */
export interface FirefoxOptions {
  /** `host:port` whose `https://` requests go straight to HTTP/3 on that UDP port. */
  h3Origin: string;
  /** PEM file of the CA that signed the server's certificate (trusted for this run only). */
  caPath: string;
  /** Firefox is stopped once this settles (e.g. when the page has reported its results). */
  until: Promise<unknown>;
  /** Hard limit on the run, in milliseconds (default 60 000); Firefox is stopped then. */
  timeoutMs?: number;
  /** Extra prefs for the profile's `user.js`; they override the defaults. */
  prefs?: Record<string, string | number | boolean>;
  /** A `MOZ_LOG` value (e.g. `nsHttp:5`); the log text is returned in {@link FirefoxRun.mozLog}. */
  mozLog?: string;
}

/** What {@link firefoxRun} observed. */
export interface FirefoxRun {
  /** True when {@link FirefoxOptions.until} had not settled within the time limit. */
  timedOut: boolean;
  /** Exit code of the (stopped) Firefox process. */
  code: number;
  /** Firefox's stderr. */
  stderr: string;
  /** The `MOZ_LOG` output of every Firefox process, when {@link FirefoxOptions.mozLog} was set. */
  mozLog: string;
}

function firstExisting(paths: string[]): string | null {
  for (const p of paths) {
    try {
      Deno.statSync(p);
      return p;
    } catch {
      // try the next
    }
  }
  return null;
}

/** The path of the Firefox binary, or `null` when it is not installed. */
export function firefoxPath(): string | null {
  return firstExisting(["/usr/bin/firefox-esr", "/usr/bin/firefox"]);
}

/** The path of NSS's `certutil` (Debian `libnss3-tools`), or `null`. */
export function certutilPath(): string | null {
  return firstExisting(["/usr/bin/certutil"]);
}

/**
 * Prefs of the test profile. Besides HTTP/3, they turn off what would reach
 * the Internet on start-up (telemetry, updates, captive-portal and region
 * checks, Safe Browsing, push, OCSP); what is left (remote-settings polls, for
 * one) goes to a dead HTTP proxy on loopback, so a run stays on loopback
 * (checked with `mozLog: "nsHttp:5,nsSocketTransport:5"`: every socket is to
 * 127.0.0.1).
 */
function profilePrefs(host: string, port: number): Record<string, string | number | boolean> {
  return {
    // HTTP/3 for host:port from the first request: the testing Alt-Svc mapping,
    // used without waiting for an Alt-Svc header.
    "network.http.http3.enable": true,
    "network.http.http3.alt-svc-mapping-for-testing": `${host};h3=:${port}`,
    "network.http.http3.force-use-alt-svc-mapping-for-testing": true,
    // Firefox turns HTTP/3 off when it finds a root that is not built in,
    // which our test CA is.
    "network.http.http3.disable_when_third_party_roots_found": false,
    // `localhost` is also ::1; the proxy under test listens on 127.0.0.1.
    "network.dns.disableIPv6": true,
    "network.trr.mode": 5,
    // Loopback only: whatever is not localhost goes to a proxy that is not there.
    "network.proxy.type": 1,
    "network.proxy.http": "127.0.0.1",
    "network.proxy.http_port": 9,
    "network.proxy.ssl": "127.0.0.1",
    "network.proxy.ssl_port": 9,
    "network.proxy.no_proxies_on": "localhost, 127.0.0.1",
    "network.proxy.allow_hijacking_localhost": false,
    "network.captive-portal-service.enabled": false,
    "network.connectivity-service.enabled": false,
    "network.dns.disablePrefetch": true,
    "network.prefetch-next": false,
    "network.predictor.enabled": false,
    "security.OCSP.enabled": 0,
    "security.remote_settings.crlite_filters.enabled": false,
    "security.remote_settings.intermediates.enabled": false,
    "browser.safebrowsing.malware.enabled": false,
    "browser.safebrowsing.phishing.enabled": false,
    "browser.safebrowsing.downloads.enabled": false,
    "browser.safebrowsing.blockedURIs.enabled": false,
    "browser.safebrowsing.provider.mozilla.updateURL": "",
    "browser.safebrowsing.provider.google4.updateURL": "",
    "browser.region.network.url": "",
    "browser.region.update.enabled": false,
    "browser.search.update": false,
    "geo.provider.network.url": "",
    "app.update.auto": false,
    "app.update.disabledForTesting": true,
    "app.normandy.enabled": false,
    "extensions.update.enabled": false,
    "extensions.getAddons.cache.enabled": false,
    "extensions.blocklist.enabled": false,
    "media.gmp-manager.updateEnabled": false,
    "dom.push.connection.enabled": false,
    "datareporting.policy.dataSubmissionEnabled": false,
    "datareporting.healthreport.uploadEnabled": false,
    "toolkit.telemetry.enabled": false,
    "toolkit.telemetry.unified": false,
    "toolkit.telemetry.server": "",
    "browser.ping-centre.telemetry": false,
    // A quiet first start: no welcome, default-browser or session-restore pages.
    "browser.shell.checkDefaultBrowser": false,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.startup.page": 0,
    "browser.startup.homepage": "about:blank",
    "browser.newtabpage.enabled": false,
    "browser.newtabpage.activity-stream.feeds.topsites": false,
    "browser.newtabpage.activity-stream.feeds.section.topstories": false,
    "browser.newtabpage.activity-stream.showSponsored": false,
    "browser.newtabpage.activity-stream.showSponsoredTopSites": false,
    "browser.newtabpage.activity-stream.telemetry": false,
    "browser.aboutwelcome.enabled": false,
    "startup.homepage_welcome_url": "",
    "startup.homepage_welcome_url.additional": "",
    "datareporting.policy.firstRunURL": "",
    "browser.sessionstore.resume_from_crash": false,
    "toolkit.startup.max_resumed_crashes": -1,
  };
}

function userJs(prefs: Record<string, string | number | boolean>): string {
  return Object.entries(prefs)
    .map(([k, v]) => `user_pref(${JSON.stringify(k)}, ${JSON.stringify(v)});\n`)
    .join("");
}

async function run(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    const err = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
    throw new Error(`${cmd} ${args.join(" ")} failed (${out.code}): ${err}`);
  }
}

/**
 * Opens `url` in headless Firefox with a fresh profile (see the module doc),
 * waits for `opts.until` or the time limit, then stops Firefox (SIGTERM, then
 * SIGKILL after 10 s) and removes the profile.
 */
export async function firefoxRun(url: string, opts: FirefoxOptions): Promise<FirefoxRun> {
  const bin = firefoxPath();
  if (!bin) throw new Error("firefox is not installed (apt-get install -y firefox-esr)");
  const certutil = certutilPath();
  if (!certutil) throw new Error("certutil is not installed (apt-get install -y libnss3-tools)");
  const colon = opts.h3Origin.lastIndexOf(":");
  const host = opts.h3Origin.slice(0, colon);
  const port = Number(opts.h3Origin.slice(colon + 1));
  const root = await Deno.makeTempDir({ prefix: "spooky-firefox-" });
  const profile = `${root}/profile`;
  const home = `${root}/home`;
  try {
    await Deno.mkdir(profile);
    await Deno.mkdir(home);
    await Deno.writeTextFile(
      `${profile}/user.js`,
      userJs({ ...profilePrefs(host, port), ...opts.prefs }),
    );
    // A new NSS database in the profile, with the test CA trusted for TLS servers.
    await run(certutil, ["-N", "-d", `sql:${profile}`, "--empty-password"]);
    await run(certutil, [
      "-A",
      "-d",
      `sql:${profile}`,
      "-t",
      "C,,",
      "-n",
      "spooky-test-ca",
      "-i",
      opts.caPath,
    ]);
    const env: Record<string, string> = {
      // Firefox as root wants a HOME of its own; keep caches out of the real one.
      HOME: home,
      XDG_CACHE_HOME: `${home}/.cache`,
      XDG_CONFIG_HOME: `${home}/.config`,
      MOZ_HEADLESS: "1",
      MOZ_CRASHREPORTER_DISABLE: "1",
    };
    if (opts.mozLog) {
      env.MOZ_LOG = opts.mozLog;
      env.MOZ_LOG_FILE = `${root}/moz`;
    }
    const child = new Deno.Command(bin, {
      args: ["--headless", "--no-remote", "--profile", profile, url],
      env,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const output = child.output();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = await Promise.race([
      opts.until.then(() => false, () => false),
      output.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), opts.timeoutMs ?? 60_000);
      }),
    ]);
    clearTimeout(timer);
    const kill = (signal: Deno.Signal) => {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    };
    kill("SIGTERM");
    const hard = setTimeout(() => kill("SIGKILL"), 10_000);
    const out = await output;
    clearTimeout(hard);
    let mozLog = "";
    if (opts.mozLog) {
      for await (const e of Deno.readDir(root)) {
        if (e.isFile && e.name.startsWith("moz")) {
          mozLog += await Deno.readTextFile(`${root}/${e.name}`);
        }
      }
    }
    return {
      timedOut,
      code: out.code,
      stderr: new TextDecoder().decode(out.stderr),
      mozLog,
    };
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

/**
 * {@link firefoxRun} on `path` of the proxy listening on `proxyPort`
 * (`https://localhost:<port>`, over HTTP/3, trusting the test CA), until
 * `until` settles.
 */
export async function firefoxThroughProxy(
  proxyPort: number,
  path: string,
  until: Promise<unknown>,
): Promise<FirefoxRun> {
  const origin = `localhost:${proxyPort}`;
  const { caPath } = await testCerts();
  return await firefoxRun(`https://${origin}${path}`, { h3Origin: origin, caPath, until });
}
