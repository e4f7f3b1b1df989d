#!/usr/bin/env node
// Screenshots of the browser host demo (browser/demo/) in Debian's headless Chromium:
// serves browser/ with the checks' page server, clicks through the demo, writes a PNG.
//   node browser/demo/screenshot.mjs [OUT.png]   (default: demo.png in the current directory)
// `tycli serve` does not serve the demo yet (docs/browser.md "Demo").
import { chromium } from 'playwright-core';
import { listen, startHostServer } from '../tests/servers.mjs';

const out = process.argv[2] || 'demo.png';
const server = startHostServer();
const port = await listen(server);
const browser = await chromium.launch({ executablePath: process.env.TASKYON_CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
try {
  const context = await browser.newContext({ viewport: { width: 1180, height: 900 } });
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${port}/demo/index.html`);
  await page.waitForFunction(() => window.demoReady === true);
  const settle = (id, text) => page.waitForFunction(([id, text]) => !document.getElementById(id).textContent.includes(text), [id, text]);
  for (const id of ['alice', 'alice', 'bob']) { await page.click('#' + id); await settle('counter-out', '—'); await page.waitForTimeout(150); }
  await page.click('#activate');
  await page.click('#alice'); await page.waitForTimeout(400);
  await page.click('#stuck'); await settle('stuck-out', '—');
  await page.click('#fetch'); await settle('fetch-out', '—');
  await page.click('#popup'); await page.waitForTimeout(200);
  await page.check('#perm');
  const [popup] = await Promise.all([context.waitForEvent('page'), page.click('#popup')]);
  await popup.waitForLoadState();
  await page.waitForTimeout(300);
  await page.screenshot({ path: out, fullPage: true });
  await popup.setViewportSize({ width: 600, height: 260 });
  await popup.screenshot({ path: out.replace(/\.png$/, '') + '-popup.png' });
  console.log(`wrote ${out} and its -popup.png`);
} finally {
  await browser.close();
  server.close();
}
