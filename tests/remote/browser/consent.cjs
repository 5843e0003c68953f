// The user's side of `recourse mcp login`, in Debian's Chromium driven
// headless by playwright-core (the console tests' setup): open the
// authorization URL, press the login page's "Allow", follow the redirects
// to recourse's loopback callback, and print what that page says.
//
//   NODE_PATH=target/console-browser/node_modules node consent.cjs URL
//
// Chromium is RECOURSE_CHROMIUM, else /usr/bin/chromium. The server's
// certificate is the test's private CA's, which Chromium does not know:
// certificate errors are ignored in this browser context only.
"use strict";

const { chromium } = require("playwright-core");

async function main() {
  const url = process.argv[2];
  if (!url) throw new Error("usage: consent.cjs AUTHORIZATION_URL");
  const browser = await chromium.launch({
    executablePath: process.env.RECOURSE_CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox"],
  });
  try {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    await page.goto(url);
    await page.click("#allow");
    await page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback/, { timeout: 30000 });
    console.log((await page.textContent("body")).trim());
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
