#!/usr/bin/env node
// Screenshots of the browser host demo (browser/demo/) in Debian's headless Chromium:
// serves browser/ with the checks' page server, clicks through the demo, writes a PNG.
//   node browser/demo/screenshot.mjs [OUT.png] [--tycli PATH]   (default: demo.png here)
// With --tycli, a real `tycli serve` (browser/tests/strict.mjs: its own TASKYON_HOME, tool
// `getter` granted read on an HTTPS upstream on loopback) and the strict-mode toggle used.
// `tycli serve --page` serves the demo too (docs/browser.md "Demo").
import { chromium } from 'playwright-core';
import { listen, startHostServer } from '../tests/servers.mjs';
import { startStrict } from '../tests/strict.mjs';

const argv = process.argv.slice(2);
const ti = argv.indexOf('--tycli');
const strict = ti >= 0 ? await startStrict(argv.splice(ti, 2)[1]) : null;
const out = argv[0] || 'demo.png';
const server = startHostServer({ relay: { port: () => (strict ? strict.port : 0) } });
const port = await listen(server);
const browser = await chromium.launch({ executablePath: process.env.TASKYON_CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
try {
  const context = await browser.newContext({ viewport: { width: 1180, height: 900 } });
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${port}/demo/index.html` + (strict ? `#token=${strict.token}&tool=getter` : ''));
  await page.waitForFunction(() => window.demoReady === true);
  const settle = (id, text) => page.waitForFunction(([id, text]) => !document.getElementById(id).textContent.includes(text), [id, text]);
  for (const id of ['alice', 'alice', 'bob']) { await page.click('#' + id); await settle('counter-out', '—'); await page.waitForTimeout(150); }
  await page.click('#activate');
  await page.click('#alice'); await page.waitForTimeout(400);
  await page.click('#stuck'); await settle('stuck-out', '—');
  await page.click('#fetch'); await settle('fetch-out', '—');
  if (strict) {
    await page.check('#strict');
    await page.waitForFunction(() => document.getElementById('fetch-out').textContent.includes('the server'));
    await page.fill('#url', strict.origin + '/demo');
    await page.click('#fetch');
    await page.waitForFunction(() => document.getElementById('fetch-out').textContent.includes('audit') || document.getElementById('fetch-out').textContent.includes('Error'));
  }
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
  if (strict) await strict.stop();
}
