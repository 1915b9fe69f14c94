/**
 * The SVG bar chart of `docs/benchmarks.svg`, hand-rolled (no dependencies):
 * req/s, CPU µs/request, streaming throughput and latency per server.
 *
 * @module
 */

import type { BenchResults } from "./results.ts";

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

interface Panel {
  title: string;
  /** the servers shown, one bar each per group */
  series: string[];
  groups: string[];
  /** values[group][series] */
  values: number[][];
}

const COLORS: Record<string, string> = {
  floor: "#9e9e9e",
  "floor-worker": "#c7c7c7",
  spooky: "#7b3fb5",
  caddy: "#2a9d8f",
};
const OTHER = ["#b38ad6", "#e76f51", "#e9c46a", "#264653"];

/** A fixed colour per server label; spooky variants and others take the next of a small palette. */
function colorsOf(servers: string[]): Map<string, string> {
  let next = 0;
  return new Map(servers.map((s) => [s, COLORS[s] ?? OTHER[next++ % OTHER.length]]));
}

function panelSvg(
  p: Panel,
  x0: number,
  y0: number,
  w: number,
  h: number,
  colors: Map<string, string>,
): string {
  const series = p.series;
  const out: string[] = [];
  const max = Math.max(1, ...p.values.flat().filter(Number.isFinite));
  const top = y0 + 42;
  const bottom = y0 + h - 28;
  const plotH = bottom - top;
  const groupW = w / p.groups.length;
  const barW = Math.min(40, (groupW - 20) / Math.max(1, series.length));
  out.push(
    `<text x="${x0 + w / 2}" y="${
      y0 + 16
    }" text-anchor="middle" font-size="14" font-weight="bold">${esc(p.title)}</text>`,
  );
  out.push(`<line x1="${x0}" y1="${bottom}" x2="${x0 + w}" y2="${bottom}" stroke="#444"/>`);
  p.groups.forEach((g, gi) => {
    const cx = x0 + groupW * gi + groupW / 2;
    const left = cx - (barW * series.length) / 2;
    p.values[gi].forEach((v, si) => {
      if (!Number.isFinite(v)) return;
      const bh = (v / max) * plotH;
      const bx = left + si * barW;
      out.push(
        `<rect x="${bx.toFixed(1)}" y="${(bottom - bh).toFixed(1)}" width="${
          (barW - 2).toFixed(1)
        }" ` +
          `height="${bh.toFixed(1)}" fill="${colors.get(series[si])}"/>`,
      );
      out.push(
        `<text x="${(bx + barW / 2 - 1).toFixed(1)}" y="${(bottom - bh - 4).toFixed(1)}" ` +
          `text-anchor="middle" font-size="9">${v < 10 ? v.toFixed(1) : Math.round(v)}</text>`,
      );
    });
    out.push(
      `<text x="${cx}" y="${bottom + 16}" text-anchor="middle" font-size="11">${esc(g)}</text>`,
    );
  });
  return out.join("\n");
}

/** Renders the SVG chart: req/s, CPU µs/req, streaming throughput and latency. */
export function renderChart(r: BenchResults): string {
  const servers = r.servers;
  const conns = [...new Set(r.load.map((x) => x.conns))];
  const load = (s: string, c: number) => r.load.find((x) => x.server === s && x.conns === c);
  const bg = r.settings.bgRate;
  const lat = (s: string, rate: number) =>
    r.latency.find((x) => x.server === s && x.bgRate === rate);
  const colors = colorsOf(servers);
  const streamed = servers.filter((s) => r.streams.some((x) => x.server === s));
  const panels: Panel[] = [
    {
      title: "req/s (median, higher is better)",
      series: servers,
      groups: conns.map((c) => `${c} conn`),
      values: conns.map((c) => servers.map((s) => load(s, c)?.rps ?? NaN)),
    },
    {
      title: "server CPU µs/request (lower is better)",
      series: servers,
      groups: conns.map((c) => `${c} conn`),
      values: conns.map((c) => servers.map((s) => load(s, c)?.cpuUsPerReq ?? NaN)),
    },
    {
      title: "streaming Mbit/s (higher is better)",
      series: streamed,
      groups: ["download", "upload"],
      values: (["download", "upload"] as const).map((d) =>
        streamed.map((s) =>
          r.streams.find((x) => x.server === s && x.direction === d)?.mbitPerS ?? NaN
        )
      ),
    },
    {
      title: "latency ms (lower is better)",
      series: servers,
      groups: ["p50", "p99", `p99 @${bg}/s`, `open-loop p99 @${bg}/s`],
      values: [
        servers.map((s) => lat(s, 0)?.p50 ?? NaN),
        servers.map((s) => lat(s, 0)?.p99 ?? NaN),
        servers.map((s) => lat(s, bg)?.p99 ?? NaN),
        servers.map((s) => lat(s, bg)?.bgP99 ?? NaN),
      ],
    },
  ];
  const W = 960;
  const PH = 260;
  const pw = W / 2;
  const H = PH * 2 + 60;
  const body: string[] = [];
  panels.forEach((p, i) => {
    body.push(
      panelSvg(p, (i % 2) * pw + 20, 40 + Math.floor(i / 2) * PH, pw - 40, PH - 10, colors),
    );
  });
  const legend = servers.map((s, i) =>
    `<rect x="${20 + i * 120}" y="10" width="12" height="12" fill="${colors.get(s)}"/>` +
    `<text x="${36 + i * 120}" y="21" font-size="12">${
      s === "caddy" ? `Caddy ${esc(r.machine.caddy)}` : esc(s)
    }</text>`
  ).join("\n");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" ` +
    `font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
${legend}
<text x="${W - 10}" y="21" text-anchor="end" font-size="11" fill="#555">${
      esc(`${r.machine.date.slice(0, 10)} · ${r.machine.nproc} CPUs · Deno ${r.machine.deno}`)
    }</text>
${body.join("\n")}
</svg>
`;
}
