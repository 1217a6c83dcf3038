// A browser the console's end-to-end tests drive (tests/test_console.py): headless Chromium through
// puppeteer-core, one page, commands as JSON lines on stdin, one JSON answer line each on stdout.
//   node e2e.mjs --chromium /usr/bin/chromium --width 1280 --height 800
// Commands ({"cmd": …}):
//   goto {url}                 load a URL (a fresh document)
//   reload {}                  reload the page (a fresh document, as a user's reload)
//   hash {hash}                set location.hash (no reload)
//   wait {selector, text?, timeout?}   until an element matching selector (containing text) exists
//   wait_gone {selector, text?, timeout?}
//   click {selector, text?}    click the first match (containing text, when given)
//   type {selector, text}      replace an input's value, as a user types it
//   select {selector, value}
//   text {selector}            innerText of the first match ("" when none)
//   eval {expr}                the JSON value of a page expression
//   screenshot {path}          a full-page PNG
//   viewport {width, height}
//   problems {}                page errors, console errors and CSP violations seen so far
//   quit {}
// Answers: {"ok": true, "value": …} or {"ok": false, "error": "…"}.
import puppeteer from "puppeteer-core";
import { createInterface } from "node:readline";

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const browser = await puppeteer.launch({
  executablePath: opt("--chromium", "/usr/bin/chromium"),
  headless: true,
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  defaultViewport: { width: Number(opt("--width", "1280")), height: Number(opt("--height", "800")) },
});
const page = await browser.newPage();
const problems = [];
page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
page.on("console", (m) => {
  // A refused API call shows in the page as an error box (the test looks there); the network
  // errors Chromium logs for such answers are not problems of the page.
  if (m.type() === "error" && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
});
await page.evaluateOnNewDocument(() => {
  document.addEventListener("securitypolicyviolation", (e) => {
    console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`);
  });
});

// The first element matching `selector` whose text contains `text` (any, when text is null).
function finder(selector, text) {
  for (const el of document.querySelectorAll(selector)) {
    if (text == null || el.innerText.includes(text) || (el.value ?? "").includes?.(text)) return el;
  }
  return null;
}

async function find(selector, text, timeout = 10000) {
  await page.waitForFunction(finder, { timeout, polling: 50 }, selector, text ?? null);
  return page.evaluateHandle(finder, selector, text ?? null);
}

const commands = {
  async goto({ url }) { await page.goto(url, { waitUntil: "load" }); },
  async reload() { await page.reload({ waitUntil: "load" }); },
  async hash({ hash }) { await page.evaluate((h) => { location.hash = h; }, hash); },
  async wait({ selector, text, timeout }) { await find(selector, text, timeout); },
  async wait_gone({ selector, text, timeout = 10000 }) {
    await page.waitForFunction((s, t) => {
      for (const el of document.querySelectorAll(s)) if (t == null || el.innerText.includes(t)) return false;
      return true;
    }, { timeout, polling: 50 }, selector, text ?? null);
  },
  async click({ selector, text, timeout }) {
    const el = await find(selector, text, timeout);
    await el.asElement().click();
  },
  async type({ selector, text }) {
    const el = (await find(selector)).asElement();
    await el.click({ clickCount: 3 });
    await el.evaluate((e) => { e.value = ""; });
    await el.type(text);
  },
  async select({ selector, value }) { await page.select(selector, value); },
  async text({ selector }) { return page.evaluate((s) => document.querySelector(s)?.innerText ?? "", selector); },
  // A string evaluates through DevTools, which the page's CSP (no 'unsafe-eval') does not govern.
  async eval({ expr }) { return page.evaluate(`JSON.parse(JSON.stringify((${expr}) ?? null))`); },
  async screenshot({ path }) { await page.screenshot({ path, fullPage: true }); },
  async viewport({ width, height }) { await page.setViewport({ width, height }); },
  async problems() { return problems; },
};

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (msg.cmd === "quit") break;
  let answer;
  try {
    const fn = commands[msg.cmd];
    if (!fn) throw new Error(`unknown command ${msg.cmd}`);
    answer = { ok: true, value: (await fn(msg)) ?? null };
  } catch (e) {
    answer = { ok: false, error: String(e?.message ?? e) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
await browser.close();
process.exit(0);
