"""Drives `smdebug serve`'s pages in headless Chromium through Playwright (the browser of
the machine, no download): the runs page lists the fleet; the run page's loss chart and its
gradient norms gain points while the job writes, without a reload; the rule firing appears on the step axis;
the compare view overlays two runs. Screenshots go to OUT/serve-*.png.

Usage: serve_browser.py CHROMIUM URL LIVE_RUN_NAME OTHER_RUN_NAME OUT
Prints one JSON object of what it saw; exits non-zero on the first check that fails.
"""

import json
import sys
import time

from playwright.sync_api import sync_playwright

chromium, url, live_name, other_name, out = sys.argv[1:6]
base = url.split("#")[0]
seen = {}


def check(cond, what):
    if not cond:
        print(json.dumps(seen, indent=1), file=sys.stderr)
        raise SystemExit("check failed: " + what)


with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=chromium,
        args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    )
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # Runs page: every run of the fleet, a filter that narrows it.
    page.goto(base)
    page.wait_for_selector("tr.run")
    page.wait_for_function("document.querySelectorAll('tr.run').length >= 2")
    names = page.eval_on_selector_all("tr.run td:nth-child(2) a", "els => els.map(e => e.textContent)")
    seen["runs"] = names
    check(live_name in names and other_name in names, "the runs page lists both runs")
    page.fill("#filter", "^" + live_name + "$")
    check(page.eval_on_selector_all("tr.run", "els => els.length") == 1, "the filter narrows the list")
    page.fill("#filter", "")
    page.screenshot(path=out + "/serve-runs.png", full_page=True)
    ids = dict(page.eval_on_selector_all(
        "tr.run", "els => els.map(e => [e.querySelector('td:nth-child(2) a').textContent, e.dataset.id])"))

    # Run page of the live job: the loss chart grows without a reload.
    page.goto(base + "#/run/" + ids[live_name])
    loss = '.chart[data-title="loss"]'
    page.wait_for_selector(loss)
    first = int(page.get_attribute(loss, "data-points"))
    norms = '.chart[data-title="Gradient norms per layer"]'
    norms_first = int(page.get_attribute(norms, "data-points"))
    loads = page.evaluate("performance.getEntriesByType('navigation').length")
    page.wait_for_function(
        "n => Number(document.querySelector('.chart[data-title=\"loss\"]').dataset.points) >= n + 3",
        arg=first, timeout=15000)
    grown = int(page.get_attribute(loss, "data-points"))
    seen["loss_points"] = [first, grown]
    # The layers' norms follow too.
    page.wait_for_function(
        "n => Number(document.querySelector('.chart[data-title=\"Gradient norms per layer\"]').dataset.points) > n",
        arg=norms_first, timeout=15000)
    seen["norm_points"] = [norms_first, int(page.get_attribute(norms, "data-points"))]
    check(page.evaluate("performance.getEntriesByType('navigation').length") == loads, "no reload")
    # The vanishing gradient fires: a mark on the loss chart's step axis, at its step.
    page.wait_for_selector(loss + " .firing-mark", timeout=15000)
    marks = page.eval_on_selector_all(loss + " .firing-mark", "els => els.map(e => [e.dataset.rule, Number(e.dataset.step), e.offsetLeft])")
    seen["marks"] = marks
    check(any(r == "VanishingGradient" for r, _, _ in marks), "a VanishingGradient mark")
    check(all(x > 20 for _, _, x in marks), "marks sit on the plot area, not at its left edge")
    time.sleep(0.5)
    page.screenshot(path=out + "/serve-run.png", full_page=True)

    # Compare: one chart overlaying both runs.
    page.goto(base + "#/compare?runs=" + ids[live_name] + "," + ids[other_name] + "&kind=scalars&chart=loss")
    page.wait_for_selector("#compare-chart-plot")
    overlaid = int(page.get_attribute("#compare-chart-plot", "data-runs"))
    legend = page.eval_on_selector_all("#compare-chart-plot .u-legend .u-series th", "els => els.map(e => e.textContent.trim())")
    seen["compare"] = {"runs": overlaid, "legend": legend}
    check(overlaid == 2, "the compare chart overlays two runs")
    check(any(live_name in l for l in legend) and any(other_name in l for l in legend), "both runs in the legend")
    page.screenshot(path=out + "/serve-compare.png", full_page=True)

    foreign = [r for r in requests if not r.startswith(base.rstrip("/"))]
    seen["foreign_requests"] = foreign
    seen["page_errors"] = errors
    check(not foreign, "no request leaves the server")
    check(not errors, "no script error")
    browser.close()

print(json.dumps(seen))
