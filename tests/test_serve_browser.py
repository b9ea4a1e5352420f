"""perfmodel serve's page in a real headless browser (Debian's chromium and chromedriver, driven by selenium): fill
the form, get the answer, check its numbers are the CLI's JSON, download the workbook, reopen the shared link.
Skipped, saying why, where no chromium is installed (.ci/run installs it where it can)."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import RAMP_CAMPAIGN, run_json

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("serve_screenshot", ROOT / "scripts" / "serve_screenshot.py")
assert _spec is not None and _spec.loader is not None
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)

pytestmark = pytest.mark.skipif(helpers.missing() is not None, reason=f"browser tests skipped: {helpers.missing()}")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with helpers.serving() as base:
        yield base


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    """One headless chromium for the module, and its download folder: a start costs a second or two of CPU, and
    the tests started one each (38). The page keeps no storage, so a test's state ends with its page (`driver`)."""
    folder = tmp_path_factory.mktemp("downloads")
    with helpers.browser(folder) as started:
        yield started, folder


@pytest.fixture
def downloads(chromium: tuple[Any, Path]) -> Path:
    """The browser's download folder, emptied for each test (`driver`)."""
    return chromium[1]


@pytest.fixture
def driver(chromium: tuple[Any, Path]) -> Any:
    """The module's browser as a fresh one: on a blank page, the console's earlier lines read out, no downloads."""
    started, folder = chromium
    started.get("about:blank")
    started.get_log("browser")
    for earlier in folder.iterdir():
        earlier.unlink()
    return started


@pytest.fixture
def narrow(driver: Any) -> Iterator[Any]:
    """The browser at a phone's width, 420 px: set by the device metrics, as chromium's window is 500 px at least;
    back to the window's own width after."""
    metrics = {"width": 420, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    yield driver
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def cli_json(*args: str) -> Any:
    """`perfmodel ARGS --format json` through the real entry point, in-process (a subprocess per call spent a second
    of CPU importing perfmodel)."""
    return run_json(*args)


def answered(driver: Any) -> dict[str, list[Any]]:
    """The numbers the page shows, by JSON key (a value per row), once its answer is in (each cell carries the value
    it shows)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 60).until(
        lambda d: d.find_element(By.ID, "result").is_displayed() or d.find_element(By.ID, "error").is_displayed()
    )
    assert not driver.find_element(By.ID, "error").is_displayed(), driver.find_element(By.ID, "error").text
    cells = driver.find_elements(By.CSS_SELECTOR, "#result td[data-key]")
    shown: dict[str, list[Any]] = {}
    for c in cells:
        shown.setdefault(c.get_attribute("data-key"), []).append(json.loads(c.get_attribute("data-value")))
    return shown


def downloaded(driver: Any, folder: Path, fmt: str) -> Path:
    """The prediction's file the page's `fmt` button downloads into `folder` (the browser's download folder)."""
    from selenium.webdriver.common.by import By

    driver.find_element(By.CSS_SELECTOR, f"[data-format={fmt}]").click()
    found = folder / f"perfmodel-predict.{fmt}"
    deadline = time.monotonic() + 30
    while not found.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def cli_layouts(**keywords: Any) -> list[str]:
    """Each row's layout as the CLI's compare table prints it (outputs/plan_report.py full_layout), marked where the
    row is beyond the measured runs the calibration saw (beyond_mark)."""
    import perfmodel
    from perfmodel.outputs.plan_report import beyond_mark, full_layout

    return [full_layout(p) + beyond_mark(p) for p in perfmodel.compare(**keywords).predictions]


def layout_cells(driver: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    return [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#tables td.text")]


def row_names(driver: Any) -> list[str]:
    """The first line of each row's first cell of the wide table: a plan's candidates (their layout is the cell's
    note), a campaign's phases (its totals' summary below is another table)."""
    from selenium.webdriver.common.by import By

    cells = driver.find_elements(By.CSS_SELECTOR, "#tables .wide tbody td:first-child")
    return [c.text.split("\n")[0] for c in cells]


def error_shown(driver: Any) -> str:
    """The error line the page shows, once it shows one (a link's question refused, or the form's)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 60).until(lambda d: d.find_element(By.ID, "error").is_displayed())
    return str(driver.find_element(By.ID, "error").text)


def test_the_form_answers_the_cli_numbers_downloads_and_shares(driver: Any, url: str, downloads: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#model option[value='llama3.1-8b']"))
    Select(driver.find_element(By.ID, "model")).select_by_value("llama3.1-8b")
    for name, value in (("gpu", "h100-sxm"), ("n_gpus", "64"), ("tokens", "1T")):
        field = driver.find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)
    driver.find_element(By.ID, "run").click()
    shown = answered(driver)
    expected = cli_json("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "1T")
    for key in ("step_time_s", "tokens_per_s", "time_to_train_days", "cost_usd", "mfu_of_precision",
                "memory_per_gpu_gib", "breakdown.compute_s", "breakdown.dp_comm_exposed_s"):  # fmt: skip
        found = expected
        for part in key.split("."):
            found = found[part]
        assert shown[key] == [found], key
    title = "Llama 3.1 8B on 64 \u00d7 NVIDIA H100 SXM 80GB FP8 (dgx-h100), 1.00T tokens"
    assert driver.find_element(By.ID, "title").text == title
    # In GiB as the CLI and HBM's "80 GB" are: in 1e9 bytes an H100 read "of 85.9"; to three digits beside 3
    # significant digits of the use, not "of 80".
    assert driver.find_element(By.CSS_SELECTOR, "td[data-key=memory_per_gpu_gib]").text.endswith(" of 80.0")

    workbook = downloaded(driver, downloads, "xlsx")
    import openpyxl

    assert openpyxl.load_workbook(workbook).sheetnames

    link = driver.find_element(By.ID, "share").get_attribute("href")
    assert "q=predict" in link and "model=llama3.1-8b" in link and "n_gpus=64" in link
    driver.get("about:blank")
    driver.get(link)
    assert answered(driver) == shown
    assert driver.find_element(By.NAME, "n_gpus").get_attribute("value") == "64"


def test_a_mixture_of_experts_breakdown_holds_its_expert_all_to_all(driver: Any, url: str) -> None:
    """The page's parts left out a MoE model's exposed expert all-to-all (breakdown.ep_comm_exposed_s): DeepSeek-V3
    on 1,024 H100 listed compute as 88.9% of a 4.52 s sum, where it is 82.7% of its 4.86 s step."""
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=predict&model=mixtral-8x7b&gpu=h100-sxm&precision=bf16&n_gpus=64&tokens=1T&gbs=256&ep=8"
               "&tp=1&pp=1")  # fmt: skip
    shown = answered(driver)
    expected = cli_json("predict", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--precision", "bf16", "--gpus",
                        "64", "--tokens", "1T", "--gbs", "256", "--ep", "8", "--tp", "1", "--pp", "1")  # fmt: skip
    assert expected["breakdown"]["ep_comm_exposed_s"] > 0
    assert shown["breakdown.ep_comm_exposed_s"] == [expected["breakdown"]["ep_comm_exposed_s"]]
    compute = driver.find_element(By.CSS_SELECTOR, "td[data-key='breakdown.compute_s'] + td").text
    assert compute == f"{100 * expected['breakdown']['compute_s'] / expected['step_time_s']:.1f}%"


def test_the_step_time_bar_s_colours_are_named_in_the_breakdown(driver: Any, url: str) -> None:
    """The bar under the breakdown named its colours only in tooltips (a screenshot or a printout showed a blue, a
    green and a grey band and no key): each part's row now begins with its colour."""
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=predict&model=llama3.1-70b&gpu=h100-sxm&n_gpus=256&tokens=1T")
    answered(driver)
    swatches = {
        row.text.split("\n")[0].rsplit(" ", 2)[0]: row.find_element(By.CSS_SELECTOR, ".swatch").value_of_css_property(
            "background-color"
        )
        for row in driver.find_elements(By.CSS_SELECTOR, "#tables tr:has(td[data-key^=breakdown])")
    }
    bands = driver.find_elements(By.CSS_SELECTOR, "svg[aria-label='step time breakdown'] rect")
    assert len(bands) >= 3
    for band in bands:
        name = band.find_element(By.TAG_NAME, "title").get_attribute("textContent").rsplit(": ", 1)[0]
        fill = band.get_attribute("fill").lstrip("#")
        red, green, blue = (int(fill[i : i + 2], 16) for i in (0, 2, 4))
        assert swatches[name] in (f"rgba({red}, {green}, {blue}, 1)", f"rgb({red}, {green}, {blue})"), name


def test_a_candidate_without_a_plan_shows_one_dash_per_figure(driver: Any, url: str) -> None:
    """A plan whose candidates have none (405B in 5 days) read "0" GPUs, and four en dashes for days and cost (one
    for the value, and a dash-to-dash range beside it), as if it needed no GPUs; the CLI prints "-"."""
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=plan&model=llama3.1-405b&tokens=15T&gpu=h100-sxm&deadline_days=5")
    shown = answered(driver)
    assert shown["n_gpus"] == [None] and shown["cost_usd"] == [None]
    for key in ("n_gpus", "time_to_train_days", "cost_usd"):
        assert driver.find_element(By.CSS_SELECTOR, f"#tables td[data-key={key}]").text == "\u2013", key


def test_an_answered_page_logs_nothing_to_the_console(driver: Any, url: str) -> None:
    """Every load logged an error: the browser asked for /favicon.ico, which the server has not (404)."""
    driver.get(url + "/?q=predict&model=llama3.1-8b&gpu=h100-sxm&n_gpus=64&tokens=1T")
    answered(driver)
    assert [entry["message"] for entry in driver.get_log("browser")] == []


def test_a_shared_plan_link_reopens_with_its_verdict(driver: Any, url: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=plan&model=llama3.1-8b&tokens=2T&gpu=h100-sxm,b200&deadline_days=20&confidence=0.8")
    shown = answered(driver)
    expected = cli_json("plan", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpu", "b200", "--tokens", "2T",
                        "--deadline", "20d", "--confidence", "0.8")  # fmt: skip
    assert shown["n_gpus"] == [c["n_gpus"] for c in expected["candidates"]]
    for key in ("time_to_train_days", "cost_usd", "p_meet_deadline", "p_within_budget"):
        assert shown[key] == [c[key] for c in expected["candidates"]], key
    assert driver.find_element(By.ID, "verdict").text.startswith("Feasible. Cheapest: " + expected["cheapest"])


def test_a_plan_candidate_in_several_precisions_is_one_candidate(driver: Any, url: str) -> None:
    """plan() takes "ID:PRECISION,PRECISION" as one candidate in each precision, but the page split the field at every
    comma: "h100-sxm,b200:fp8,bf16" was refused as "--gpu bf16: unknown accelerator or system 'bf16'"."""

    driver.get(url + "/?q=plan&model=llama3.1-8b&tokens=1T&gpu=h100-sxm,b200:fp8,bf16&deadline_days=20")
    answered(driver)
    expected = cli_json("plan", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpu", "b200:fp8,bf16", "--tokens",
                        "1T", "--deadline", "20d")  # fmt: skip
    names = row_names(driver)
    assert names == [c["candidate"] for c in expected["candidates"]]
    assert len(names) == 3


def test_the_precisions_are_the_catalogues(driver: Any, url: str) -> None:
    """The Precision list and the plan field's split were the page's own five precisions, beside /api/catalogue's:
    the list offers the server's, and a candidate's every precision (b200's mxfp4, the list's last) stays its own."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from perfmodel.serve.app import catalogue

    known = catalogue()["accelerators"]  # what /api/catalogue sends
    precisions = list(dict.fromkeys(p for chip in known.values() for p in chip))
    driver.get(url + "/?q=plan&model=llama3.1-8b&tokens=1T&gpu=b200:bf16,mxfp4&deadline_days=20")
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[name=precision] option[value=bf16]"))
    offered = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "[name=precision] option")]
    assert offered == ["", *precisions]
    answered(driver)
    names = row_names(driver)
    assert sorted(names) == ["dgx-b200:bf16", "dgx-b200:mxfp4"]


def test_a_comparison_draws_its_scaling_chart(driver: Any, url: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=compare&model=llama3.1-8b&tokens=1T&gpu=h100-sxm,b200:fp8&n_gpus=64,128")
    answered(driver)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#tables tbody tr")) == 4
    assert len(driver.find_elements(By.CSS_SELECTOR, "#chart svg polyline")) == 2
    # The legend names the lines as the CLI's plots do (outputs/plot.py series_label), not 'h100-sxm bf16'.
    from perfmodel.inputs.hardware import get_accelerator

    legend = [t.text for t in driver.find_elements(By.CSS_SELECTOR, "#chart .legend li")]
    assert legend == [f"{get_accelerator(gpu).name} FP8" for gpu in ("h100-sxm", "b200")]
    # Trailing zeros kept: the first row's ratios read "1.00x", not "1x" beside "1.37x"; MFU to one decimal.
    speedups = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#tables td[data-key=speedup_vs_first]")]
    assert speedups[0] == "1.00\u00d7" and all(re.fullmatch(r"\d\.\d\d\u00d7", s) for s in speedups), speedups
    mfus = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#tables td[data-key=mfu_of_precision]")]
    assert all(re.fullmatch(r"\d+\.\d%", m) for m in mfus), mfus


def test_the_scaling_charts_axis_ends_on_labelled_round_values(driver: Any, url: str) -> None:
    """The days axis ended at the data: 70B on 256 H100 (330 days, its 80% range to 408) sat above the highest label,
    200, its band run into the top; now the axis runs from a 1-2-5 value below every day shown to one above."""
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=compare&model=llama3.1-70b&tokens=15T&gpu=h100-sxm,gb200:fp8&n_gpus=256,512,1024")
    answered(driver)
    expected = cli_json("compare", "--model", "llama3.1-70b", "--tokens", "15T", "--gpu", "h100-sxm", "--gpu",
                        "gb200:fp8", "--gpus", "256,512,1024")  # fmt: skip
    days = [r[key] / 86400 for r in expected for key in ("time_to_train_s_low", "time_to_train_s_high")]
    labels = driver.find_elements(By.CSS_SELECTOR, "#chart svg text[text-anchor=end]")
    ends = sorted(labels, key=lambda t: float(t.get_attribute("y")))  # top first
    top, bottom = (float(t.text.replace(",", "")) for t in (ends[0], ends[-1]))
    assert bottom <= min(days) and top >= max(days)
    assert all(f"{v:g}"[0] in "125" for v in (top, bottom))
    lines = driver.find_elements(By.CSS_SELECTOR, "#chart svg line.axis")
    axis_top = min(float(line.get_attribute(a)) for line in lines for a in ("y1", "y2"))
    assert float(ends[0].get_attribute("y")) - 4 == pytest.approx(axis_top)  # the top label at the axis's top


def usd(x: float) -> str:
    """The page's `usd()` (app.js): three significant digits, trailing zeros kept, in thousands, millions or
    billions."""
    scale, suffix = next(((size, s) for size, s in ((1e9, "B"), (1e6, "M"), (1e3, "k")) if abs(x) >= size), (1, ""))
    value = x / scale
    return f"${value:.{max(0, 2 - math.floor(math.log10(abs(value))))}f}{suffix}"


DASH = "\u2013"
"""The en dash between a range's ends, as the page writes it."""


@pytest.mark.parametrize(
    ("query", "args"),
    [
        ("q=predict&model=llama3.1-8b&gpu=h100-sxm&n_gpus=64&tokens=1T",
         ["predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "1T"]),
        ("q=compare&model=llama3.1-8b&tokens=1T&gpu=h100-sxm,b200:fp8&n_gpus=64",
         ["compare", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpu", "b200:fp8", "--gpus", "64", "--tokens",
          "1T"]),
        ("q=plan&model=llama3.1-8b&tokens=2T&gpu=h100-sxm,b200&deadline_days=20",
         ["plan", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpu", "b200", "--tokens", "2T", "--deadline",
          "20d"]),
    ],
)  # fmt: skip
def test_the_cost_range_under_an_80_percent_heading_is_the_80_percent_interval(
    driver: Any, url: str, query: str, args: list[str]
) -> None:
    """The cost's range under "80% range" was the price range (the cost at the low and high quote: $7.92M to
    $18.23M for 70B on 1,024 H100 at $2.99 to $6.88, where the 80% interval is $14.5M to $17.5M)."""
    from selenium.webdriver.common.by import By

    driver.get(f"{url}/?{query}")
    shown = answered(driver)
    expected = cli_json(*args)
    rows = expected["candidates"] if args[0] == "plan" else expected if args[0] == "compare" else [expected]
    if args[0] == "compare":  # the price each row's cost is at, the CLI's $/GPU-h column: the page had none
        assert shown["usd_per_gpu_hour"] == [r["usd_per_gpu_hour"] for r in rows]
        # and the days with failures and the other losses, the CLI's "time with losses" (a plan's days count them)
        assert shown["time_to_train_with_losses_days"] == [r["time_to_train_with_losses_days"] for r in rows]
    cells = driver.find_elements(By.CSS_SELECTOR, "#tables td[data-key=cost_usd] .range")
    shown = [c.text for c in cells]
    assert shown == [f"{usd(r['cost_usd_low'])} {DASH} {usd(r['cost_usd_high'])}" for r in rows]
    assert all(r["cost_usd_at_min_price"] < r["cost_usd_low"] for r in rows)  # the two ranges differ here
    if args[0] == "predict":
        price = f"{usd(expected['cost_usd_at_min_price'])} {DASH} {usd(expected['cost_usd_at_max_price'])}"
        assert price in [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#tables td")]


def test_the_layout_names_its_virtual_stages(driver: Any, url: str) -> None:
    """The page printed 'TP4 PP2 CP1 DP8' for the CLI's TP4 PP2 VP20 CP1 DP8: a layout that cannot be launched as
    read (Megatron's --num-layers-per-virtual-pipeline-stage follows from VP)."""
    from selenium.webdriver.common.by import By

    flags = ["--model", "llama3.1-70b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "1T", "--gbs", "128"]
    flags += ["--pp", "2"]  # ZeRO-3 at PP 1 is the fastest layout without it
    expected = cli_json("predict", *flags)["parallelism"]
    assert expected["pp"] > 1 and expected["vp"] > 1
    stages = "TP{tp} PP{pp} VP{vp} CP{cp} DP{dp}".format(**expected)
    driver.get(url + "/?q=predict&model=llama3.1-70b&gpu=h100-sxm&n_gpus=64&tokens=1T&gbs=128&pp=2")
    answered(driver)
    assert driver.find_element(By.ID, "verdict").text.startswith(f"Layout: {stages},")
    assert driver.find_element(By.NAME, "pp").is_displayed()  # the layout the link fixes is shown, not folded away
    driver.get(url + "/?q=compare&model=llama3.1-70b&gpu=h100-sxm&n_gpus=64&tokens=1T&gbs=128&pp=2")
    answered(driver)
    (batched,) = cli_layouts(model="llama3.1-70b", gpu="h100-sxm", n_gpus=64, tokens="1T", gbs=128, pp=2)
    assert batched.startswith(f"{stages} MBS{expected['mbs']} GBS{expected['gbs']}")  # the batch too
    assert layout_cells(driver) == [batched]


def test_a_comparisons_layout_names_its_zero_stage_and_recompute(driver: Any, url: str) -> None:
    """A comparison's rows printed 'TP1 PP1 VP1 CP2 DP128 MBS1 GBS512' for Llama 3.1 70B on 256 H100, a layout whose
    weights cannot fit one GPU as read: the CLI's row goes on 'ZeRO-3 recompute-selective'."""
    driver.get(url + "/?q=compare&model=llama3.1-70b&tokens=1T&gpu=h100-sxm&n_gpus=256")
    answered(driver)
    (expected,) = cli_layouts(model="llama3.1-70b", tokens="1T", gpu="h100-sxm", n_gpus=256)
    assert expected.removesuffix(" *").endswith("ZeRO-3 recompute-selective") and layout_cells(driver) == [expected]


def unnamed(text: str, family: str) -> str:
    """The CLI's words for an axis as the page says them: the JSON's evidence does not name the accelerator family."""
    from perfmodel.planning.evidence import family_name

    return text.replace(family_name(family), "its accelerator family")


def test_a_prediction_beyond_the_evidence_is_marked_as_the_cli_marks_it(driver: Any, url: str) -> None:
    """The CLI marks a comparison's row beyond the measured runs the calibration saw with `*` and a footnote naming
    the axes, and warns under a prediction's table; the page showed none of it. Llama 3.1 70B on 1,024 H100 in FP8,
    its layout searched (TP1 PP1 CP2 ZeRO-3: a layout class never measured for its class on Hopper, above the best
    measured run), beside B200 (within the evidence); at the measured TP4 PP8, no warning."""
    from selenium.webdriver.common.by import By

    import perfmodel

    query = "model=llama3.1-70b&tokens=15T&precision=fp8&n_gpus=1024"
    driver.get(f"{url}/?q=compare&{query}&gpu=h100-sxm,b200")
    answered(driver)
    h100, b200 = perfmodel.compare(model="llama3.1-70b", tokens="15T", precision="fp8", n_gpus=1024,
                                   gpu=["h100-sxm", "b200"]).predictions  # fmt: skip
    e = h100.evidence
    assert e is not None and e.beyond == ("layout class", "above best measured") and e.widened_by
    assert b200.evidence is not None and not b200.evidence.beyond
    assert layout_cells(driver) == cli_layouts(model="llama3.1-70b", tokens="15T", precision="fp8", n_gpus=1024,
                                               gpu=["h100-sxm", "b200"])  # fmt: skip
    assert [cell.endswith(" *") for cell in layout_cells(driver)] == [True, False]
    note = driver.find_element(By.CSS_SELECTOR, "#tables .evidence").text.splitlines()
    assert note[0].startswith('* beyond the measured runs the calibration saw (docs/validation.md, "How far from')
    assert note[1:] == [f"dgx-h100 fp8 on 1,024: layout class, above best measured; 80% interval {e.widening:.2f}x "
                        "as wide"]  # fmt: skip

    driver.get(f"{url}/?q=predict&{query}&gpu=h100-sxm")
    answered(driver)
    warning = driver.find_element(By.CSS_SELECTOR, "#tables .evidence.warning").text.splitlines()
    assert warning[0] == 'Warning: beyond the measured runs (docs/validation.md, "How far from evidence"):'
    assert warning[1] == unnamed(e.axis_text("layout class"), e.family)
    assert warning[2].startswith(f"{e.ratio:.2f}x the model TFLOP/s per GPU of the best measured run of this model")
    assert warning[3] == (f"80% interval {e.widening:.2f}x as wide: x{e.interval.low:.3f}-x{e.interval.high:.3f} on "
                          "a predicted time (layout class, above best measured)")  # fmt: skip

    driver.get(f"{url}/?q=predict&{query}&gpu=h100-sxm&tp=4&pp=8")
    answered(driver)
    assert driver.find_elements(By.CSS_SELECTOR, "#result .evidence") == []


def test_the_axes_that_widened_an_interval_are_compared_as_a_set(driver: Any, url: str) -> None:
    """The page named the axes that widened the interval where their joined text differed from the axes beyond's:
    the same axes in another order read as if only some had widened it."""
    driver.get(url)
    said = "return widening({widened_by: arguments[0], beyond: arguments[1], widening: 1.5})"
    assert driver.execute_script(said, "scale band; layout class", "layout class; scale band") == (
        "80% interval 1.50x as wide"
    )
    assert driver.execute_script(said, "scale band", "layout class; scale band") == (
        "80% interval 1.50x as wide (by scale band)"
    )


def test_a_plan_marks_its_candidates_beyond_the_evidence(driver: Any, url: str) -> None:
    """The CLI's plan marks a candidate's layout beyond the measured runs with `*` and a footnote; the page now does,
    from the JSON's `plan.evidence`: 70B in FP8 on H100 (searched TP1 PP1 CP2 ZeRO-3) and B200."""
    from selenium.webdriver.common.by import By

    driver.get(f"{url}/?q=plan&model=llama3.1-70b&tokens=1T&gpu=h100-sxm:fp8,b200:fp8&deadline_days=30")
    answered(driver)
    planned = cli_json("plan", "--model", "llama3.1-70b", "--tokens", "1T", "--gpu", "h100-sxm:fp8", "--gpu",
                       "b200:fp8", "--deadline", "30d")["candidates"]  # fmt: skip
    marked = [bool(c["plan"]["evidence"]["beyond"]) for c in planned]
    assert marked == [True, False]
    notes = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#tables td .note")]
    assert notes == [c["layout"] + (" *" if m else "") for c, m in zip(planned, marked, strict=True)]
    e = planned[0]["plan"]["evidence"]
    note = driver.find_element(By.CSS_SELECTOR, "#tables .evidence li").text
    assert note == (f"{planned[0]['candidate']} on {planned[0]['n_gpus']:,}: {e['beyond'].replace('; ', ', ')}; 80% "
                    f"interval {e['widening']:.2f}x as wide")  # fmt: skip


def test_a_campaigns_phases_beyond_the_evidence_are_marked_as_the_cli_marks_them(driver: Any, url: str) -> None:
    """`perfmodel predict` of a campaign marks its phases beyond the measured runs `[e]` with a line per finding
    naming the phases; the page showed none of it. DeepSeek-V3's campaign on 2,048 H800: every phase beyond (MoE on
    1,025-4,096 GPUs of Hopper), its interval not widened (a MoE fit holds each model out)."""
    from selenium.webdriver.common.by import By

    import perfmodel
    from perfmodel.outputs.campaign_report import evidence_notes

    name = "campaign-deepseek-v3"
    driver.get(f"{url}/?q=predict&scenario={name}")
    answered(driver)
    campaign = perfmodel.predict(name)
    assert isinstance(campaign, perfmodel.Campaign)
    phases = campaign.to_dict()["phases"]
    assert row_names(driver) == [p["phase"] + (" [e]" if p["evidence"]["beyond"] else "") for p in phases] + ["total"]
    family = next(iter(campaign.phases.values())).evidence.family  # type: ignore[union-attr]
    head, *lines = evidence_notes(campaign)
    note = driver.find_element(By.CSS_SELECTOR, "#tables .evidence").text.splitlines()
    assert note[0].startswith(head.split(" (")[0]) and len(lines) > 1
    assert note[1:] == [unnamed(line.strip(), family) for line in lines]


def test_the_gpu_count_hint_follows_the_question(driver: Any, url: str) -> None:
    """Predict and Compare share the GPUs field, whose hint was Compare's "256 or 256,512,1024" under Predict too,
    where a list is refused; a scenario's own count is "the scenario's" under either."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#scenario option[value=default]"))
    counts = driver.find_element(By.ID, "n_gpus")

    def hint_under(question: str) -> str:
        driver.find_element(By.CSS_SELECTOR, f"#questions [data-question={question}]").click()
        return str(counts.get_attribute("placeholder"))

    assert [hint_under(q) for q in ("predict", "compare", "predict")] == ["e.g. 256", "256 or 256,512,1024", "e.g. 256"]
    Select(driver.find_element(By.ID, "scenario")).select_by_value("default")
    assert [hint_under(q) for q in ("compare", "predict")] == ["the scenario's"] * 2
    Select(driver.find_element(By.ID, "scenario")).select_by_value("")
    assert counts.get_attribute("placeholder") == "e.g. 256"
    assert hint_under("compare") == "256 or 256,512,1024"


def test_systems_at_their_own_counts_answer_beside_the_untouched_count_field(driver: Any, url: str) -> None:
    """The API refuses a count no row uses; the form's pre-filled 256 is not one the user gave, so systems all at
    their own counts (h100-sxm@64, b200@32) are answered at those counts, not refused for it."""
    driver.get(url + "/?q=compare&model=llama3.1-8b&tokens=100B&gpu=h100-sxm@64,b200@32")
    answered(driver)
    expected = cli_json(
        "compare", "--model", "llama3.1-8b", "--tokens", "100B", "--gpu", "h100-sxm@64", "--gpu", "b200@32"
    )
    assert len(layout_cells(driver)) == 2 and [row["n_gpus"] for row in expected] == [64, 32]


def test_a_comparison_of_a_mixture_of_experts_names_its_expert_parallelism(driver: Any, url: str) -> None:
    """A comparison's rows printed 'TP1 PP1 VP1 CP1 DP64' for the CLI's 'TP1 PP1 VP1 CP1 DP64 EP16' (Qwen3-30B-A3B
    on 64 H100): launched as read, its experts are not split."""
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=compare&model=qwen3-30b-a3b&tokens=1T&gpu=h100-sxm&n_gpus=64&ep=16")
    answered(driver)
    (expected,) = cli_layouts(model="qwen3-30b-a3b", tokens="1T", gpu="h100-sxm", n_gpus=64, ep=16)
    assert " EP16 " in expected and layout_cells(driver) == [expected]
    # one system at one size: the title read "1 systems x 1 sizes"
    assert driver.find_element(By.ID, "title").text.endswith(": 1 system \u00d7 1 size, ratios to the first row")


def test_a_model_file_empties_the_model_list(driver: Any, url: str, tmp_path: Path) -> None:
    """A model file chosen left the Model list on llama3.1-70b while the file's model was answered; the list now
    reads "the model file's", and a model picked from it drops the file."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    ours = tmp_path / "my.toml"
    ours.write_text('id = "my-8b"\nbase = "llama3.1-8b"\nlayers = 16\n')
    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#scenario option[value=default]"))
    driver.find_element(By.ID, "model_file").send_keys(str(ours))
    models = Select(driver.find_element(By.ID, "model"))
    assert models.first_selected_option.get_attribute("value") == ""
    assert models.first_selected_option.text == "the model file's"
    driver.find_element(By.NAME, "n_gpus").clear()
    driver.find_element(By.NAME, "n_gpus").send_keys("64")
    driver.find_element(By.ID, "run").click()
    answered(driver)
    assert driver.find_element(By.ID, "title").text.startswith("my-8b on 64 ")
    models.select_by_value("llama3.1-8b")
    assert driver.find_element(By.ID, "model_file").get_attribute("value") == ""
    driver.find_element(By.ID, "run").click()
    WebDriverWait(driver, 60).until(lambda d: d.find_element(By.ID, "title").text.startswith("Llama 3.1 8B on 64 "))


def test_predict_takes_a_system_from_the_gpu_or_system_field(driver: Any, url: str) -> None:
    """The field reads "GPU or system" and lists the zoo's systems, but Predict sent a system as predict()'s `gpu`:
    gb200-nvl72 answered "'gb200-nvl72' is a system, not a GPU"."""
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=predict&model=llama3.1-8b&gpu=gb200-nvl72&n_gpus=72&tokens=1T")
    shown = answered(driver)
    flags = ["--model", "llama3.1-8b", "--system", "gb200-nvl72", "--gpus", "72", "--tokens", "1T"]
    expected = cli_json("predict", *flags)
    assert shown["step_time_s"] == [expected["step_time_s"]]
    assert driver.find_element(By.ID, "title").text.endswith("(gb200-nvl72), 1.00T tokens")


def test_predict_takes_an_uploaded_system(driver: Any, url: str, tmp_path: Path) -> None:
    """README's own system file (ours-h100, `base = "dgx-h100"`), uploaded and named in Predict's "GPU or system"
    field, was sent as predict()'s gpu: "'ours-h100' is a system, not a GPU"."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    ours = tmp_path / "ours.toml"
    ours.write_text('id = "ours-h100"\nbase = "dgx-h100"\nnics_per_gpu = { value = 0.5, source = "our cluster" }\n')
    driver.get(url + "/?q=predict&model=llama3.1-8b&gpu=ours-h100&n_gpus=64&tokens=1T")
    error_shown(driver)  # not uploaded yet
    driver.find_element(By.ID, "hardware_files").send_keys(str(ours))
    driver.find_element(By.ID, "run").click()
    WebDriverWait(driver, 60).until(lambda d: d.find_element(By.ID, "result").is_displayed())
    shown = answered(driver)
    flags = ["--model", "llama3.1-8b", "--hardware", str(ours), "--system", "ours-h100", "--gpus", "64"]
    flags += ["--tokens", "1T"]
    assert shown["step_time_s"] == [cli_json("predict", *flags)["step_time_s"]]


def test_user_text_in_an_error_is_shown_as_text(driver: Any, url: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=predict&model=llama3.1-8b&gpu=<b id=injected>x</b>&n_gpus=8")
    assert "<b id=injected>x</b>" in error_shown(driver)
    assert not driver.find_elements(By.ID, "injected")
    assert "wrong" in driver.find_element(By.NAME, "gpu").get_attribute("class")


def test_a_link_with_a_model_the_list_lacks_is_refused_not_answered_for_another(driver: Any, url: str) -> None:
    """The model list had no 'llama3.1-450b': the select showed nothing and the page answered Llama 3.1 70B, the
    default scenario's model, under the shared link's question."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url + "/?q=predict&model=llama3.1-450b&gpu=h100-sxm&n_gpus=8")
    WebDriverWait(driver, 30).until(
        lambda d: d.find_element(By.ID, "error").is_displayed() or d.find_element(By.ID, "result").is_displayed()
    )
    error = driver.find_element(By.ID, "error")
    assert error.is_displayed() and "unknown model 'llama3.1-450b' (did you mean 'llama3.1-405b'?)" in error.text
    assert not driver.find_element(By.ID, "result").is_displayed()


FAILING_ANSWER = """const fetched = window.fetch;
window.fetch = (path, options) => String(path).startsWith("/api/predict")
  ? Promise.resolve(new Response("{}", { status: 200, headers: { "Content-Type": "application/json" } }))
  : fetched(path, options);"""
"""An answer the page cannot draw: /api/predict answers `{}`, which drawPredict reads fields of."""


def test_an_answer_the_page_cannot_draw_is_an_error_not_a_stuck_status(driver: Any, url: str) -> None:
    """A draw that threw left the status on "Predicting…", the button enabled and nothing shown, no line said why
    (a campaign's phases drawn by a function gone threw so)."""
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=predict&model=llama3.1-8b&gpu=h100-sxm&n_gpus=8")
    answered(driver)
    driver.execute_script(FAILING_ANSWER)
    driver.find_element(By.ID, "run").click()
    assert error_shown(driver).startswith("error: page error: ")
    assert driver.find_element(By.ID, "status").text == ""
    assert not driver.find_element(By.ID, "result").is_displayed()


OUTSIDE = """return [...document.querySelectorAll("#result *")]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
  .map((e) => `${e.tagName} ${e.textContent.slice(0, 40)}`);"""
"""What the answer shows past the screen's right edge (a comparison's and a plan's rows included, as cards)."""


@pytest.mark.parametrize(
    "query",
    ["q=predict&model=llama3.1-70b&gpu=h100-sxm&n_gpus=256&tokens=1T",
     "q=compare&model=llama3.1-70b&tokens=2T&gpu=h100-sxm,b200:fp8,gb200:nvfp4&n_gpus=256,512,1024",
     "q=plan&model=llama3.1-8b&tokens=2T&gpu=h100-sxm,b200:fp8,bf16&deadline_days=20&confidence=0.8",
     "q=compare&scenario=campaign-llama3.1-405b&gpu=gb300@2048,h100-sxm@4096"],
)  # fmt: skip
def test_at_a_phones_width_every_figure_is_on_the_screen(narrow: Any, url: str, query: str) -> None:
    """At 420 px the prediction's labels pushed its values off the screen (the page 662 px wide, the values not
    seen), and the scaling chart ran 340 px past it, its legend with it."""
    from selenium.webdriver.common.by import By

    narrow.get(f"{url}/?{query}")
    answered(narrow)
    assert narrow.execute_script("return window.innerWidth") == 420
    assert narrow.execute_script("return document.documentElement.scrollWidth") == 420
    assert narrow.execute_script(OUTSIDE) == []
    if query.startswith("q=compare&model"):
        legend = narrow.find_elements(By.CSS_SELECTOR, "#chart .legend li")
        assert len(legend) == 3 and all(entry.is_displayed() for entry in legend)


def test_at_a_phones_width_a_plans_days_cost_and_chances_are_on_the_screen(narrow: Any, url: str) -> None:
    """At 420 px a plan's table showed its first three columns (candidate, verdict, GPUs) and scrolled the figures a
    planner asks first, days, cost and P(deadline), off the screen: each candidate is now a card, its figures under
    their headings."""
    from selenium.webdriver.common.by import By

    narrow.get(f"{url}/?q=plan&model=llama3.1-8b&tokens=2T&gpu=h100-sxm,b200&deadline_days=20")
    answered(narrow)
    first = narrow.find_element(By.CSS_SELECTOR, "#tables tbody tr")
    for key in ("time_to_train_days", "cost_usd", "p_meet_deadline"):
        box = first.find_element(By.CSS_SELECTOR, f"td[data-key={key}]").rect
        assert box["x"] >= 0 and box["x"] + box["width"] <= 420, (key, box)
    # Each figure under its heading, the table's own: "Days (80% range)" above the days.
    days = first.find_element(By.CSS_SELECTOR, "td[data-key=time_to_train_days]")
    label = narrow.execute_script("return getComputedStyle(arguments[0], '::before').content", days)
    assert label == '"Days (80% range)"'


def test_a_deadline_in_days_is_refused_in_days(driver: Any, url: str) -> None:
    """The deadline is typed in days and sent as plan()'s deadline_s: -1 day was refused as "deadline_s=-86400:
    allowed a finite number above 0 up to 1,000,000,000,000,000", a keyword, a value and a unit the form lacks."""
    from selenium.webdriver.common.by import By

    from perfmodel.inputs.arguments import MAX_FIGURE

    allowed = f"allowed a number of days above 0 up to {MAX_FIGURE / 86400:,.0f}"  # plan()'s bound, the catalogue's
    for days in ("-1", "1e12"):  # 1e12 days was refused in seconds, as deadline_s=8.64e16
        driver.get(url + f"/?q=plan&model=llama3.1-8b&tokens=1T&gpu=h100-sxm&deadline_days={days}")
        assert error_shown(driver) == f"error: deadline_days={days}: {allowed}"
        assert "wrong" in driver.find_element(By.NAME, "deadline_days").get_attribute("class")


@pytest.mark.parametrize(
    ("query", "field", "line"),
    [
        ("q=plan&model=llama3.1-8b&tokens=1T&gpu=h100-sxm&deadline_days=", "deadline_days",
         "deadline_days and budget_usd: both empty; a plan needs a goal: a deadline in days, a budget in USD, or both"),
        ("q=predict&model=llama3.1-8b&tokens=1T&gpu=h100-sxm&n_gpus=64,128", "n_gpus",
         "n_gpus=64,128: Predict answers one GPU count; Compare takes several"),
        ("q=predict&model=llama3.1-8b&tokens=1T&gpu=h100-sxm,b200&n_gpus=64", "gpu",
         "gpu=h100-sxm,b200: Predict answers one GPU or system; Compare takes several"),
    ],
)  # fmt: skip
def test_a_question_the_form_cannot_ask_is_refused_in_its_words(
    driver: Any, url: str, query: str, field: str, line: str
) -> None:
    """A plan with neither deadline nor budget was refused with plan()'s line, "plan needs a goal: --deadline (e.g.
    30d) and/or --budget", flags the form lacks, marking no field; two counts (or systems) typed into Predict's
    fields, which Compare shares, as "n_gpus=[64, 128]: Input should be a valid integer"."""
    from selenium.webdriver.common.by import By

    driver.get(f"{url}/?{query}")
    assert error_shown(driver) == f"error: {line}"
    assert "wrong" in driver.find_element(By.NAME, field).get_attribute("class")


def test_the_gpu_counts_under_the_chart_never_overlap(narrow: Any, url: str) -> None:
    """Eight GPU counts on a phone's axis (2,048, 4,096 and 8,192 in 280 px) ran into each other; sixteen, the most a
    comparison takes here, printed over each other: a label is left out where it would not clear the last."""
    from selenium.webdriver.common.by import By

    counts = ",".join(str(8 * k) for k in range(1, 17))
    narrow.get(f"{url}/?q=compare&model=llama3.1-8b&tokens=1T&gpu=h100-sxm&n_gpus={counts}")
    answered(narrow)
    labels = narrow.find_elements(By.CSS_SELECTOR, "#chart svg text[text-anchor=middle]")
    boxes = sorted((b["x"], b["x"] + b["width"]) for t in labels if t.text[0].isdigit() for b in [t.rect])
    assert len(boxes) >= 3
    assert all(left > right for (_, right), (left, _) in pairwise(boxes)), boxes


def test_a_refused_layout_field_is_unfolded(driver: Any, url: str) -> None:
    """tp=3 was refused naming tp, and the page marked the TP field inside the folded "Layout" section: the error
    named a field the page did not show."""
    from selenium.webdriver.common.by import By

    driver.get(url + "/?q=predict&model=llama3.1-8b&tokens=1T&gpu=h100-sxm&n_gpus=64&tp=3")
    assert error_shown(driver).startswith("error: tp=3: ")
    field = driver.find_element(By.NAME, "tp")
    assert field.is_displayed() and "wrong" in field.get_attribute("class")


def test_a_bundled_campaign_shows_its_phases_total_download_and_link(driver: Any, url: str, downloads: Path) -> None:
    """A campaign chosen by name from the list (/api/catalogue's scenarios): a row per phase and the total with its
    80% range, the CLI's JSON (`perfmodel predict campaign-llama3.1-405b`); the form's own model, GPUs and tokens
    emptied, not sent over the scenario's (keywords override a file: 405B's campaign ran as 70B on 256 H100); the CSV
    download is the campaign's, and the link reopens it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    name = "campaign-llama3.1-405b"
    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, f"#scenario option[value='{name}']"))
    Select(driver.find_element(By.ID, "scenario")).select_by_value(name)
    for field in ("model", "tokens", "gpu", "n_gpus"):
        assert driver.find_element(By.NAME, field).get_attribute("value") == "", field
    driver.find_element(By.ID, "run").click()
    answered(driver)
    expected = cli_json("predict", name)
    phases = expected["phases"]
    assert row_names(driver) == [p["phase"] for p in phases] + ["total"]

    def column(key: str) -> list[Any]:
        return [json.loads(c.get_attribute("data-value")) for c in driver.find_elements(By.CSS_SELECTOR,
                f".campaign td[data-key={key}]")]  # fmt: skip

    for key in ("n_gpus", "tokens_to_train", "time_to_train_days", "gpu_hours", "cost_usd", "energy_kwh", "goodput"):
        assert column(key) == [p[key] for p in phases] + [expected[key]], key
    total = driver.find_element(By.CSS_SELECTOR, ".campaign tr.total td[data-key=cost_usd] .range").text
    assert total == f"{usd(expected['cost_usd_low'])} {DASH} {usd(expected['cost_usd_high'])}"
    assert driver.find_element(By.ID, "title").text.startswith("Llama 3.1 405B campaign of 11 phases on up to 16,384")

    rows = downloaded(driver, downloads, "csv").read_text().splitlines()
    assert rows[0].startswith("phase,") and [r.split(",")[0] for r in rows[1:]] == row_names(driver)

    link = driver.find_element(By.ID, "share").get_attribute("href")
    assert f"scenario={name}" in link and "model=" not in link and "n_gpus=" not in link
    driver.get("about:blank")
    driver.get(link)
    answered(driver)
    assert row_names(driver) == [p["phase"] for p in phases] + ["total"]
    assert driver.find_element(By.NAME, "model").get_attribute("value") == ""


def test_an_uploaded_campaign_answers_as_the_file_does(driver: Any, url: str) -> None:
    """A scenario file uploaded, its phases answered as `perfmodel predict FILE`, a count typed over its own."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#scenario option[value=default]"))
    driver.find_element(By.ID, "scenario_file").send_keys(str(RAMP_CAMPAIGN))
    assert driver.find_element(By.NAME, "gpu").get_attribute("value") == ""
    driver.find_element(By.NAME, "n_gpus").send_keys("128")
    driver.find_element(By.ID, "run").click()
    shown = answered(driver)
    expected = cli_json("predict", str(RAMP_CAMPAIGN), "--gpus", "128")
    assert row_names(driver) == ["ramp", "main", "total"]
    assert shown["n_gpus"] == [128, 128, 128] and shown["step_time_s"] == [p["step_time_s"] for p in
                                                                         expected["phases"]] + [None]  # fmt: skip


CAMPAIGN = "campaign-llama3.1-405b"
COMPARED = ("gb300@2048", "h100-sxm@4096")
"""Llama 3.1 405B's campaign on 2,048 GB300 and 4,096 H100 (its 128K stage's CP 16 x TP 8 x PP 16 needs 2,048 GPUs:
on 512 it is refused)."""


def column(driver: Any, key: str) -> list[Any]:
    """The values of the cells keyed `key` (the JSON key each cell shows), in the page's order."""
    from selenium.webdriver.common.by import By

    return [json.loads(c.get_attribute("data-value")) for c in driver.find_elements(By.CSS_SELECTOR,
            f"#result td[data-key='{key}']")]  # fmt: skip


def phase_names(driver: Any) -> list[str]:
    """The system (or candidate) of each row of the per-phase table."""
    from selenium.webdriver.common.by import By

    return [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#phases td.name")]


def test_a_campaign_compared_shows_each_phase_side_by_side(driver: Any, url: str) -> None:
    """A campaign compared on two systems showed its totals only; a planner comparing 405B on GB300 and H100 wants
    each phase side by side: a row per phase and system, that phase's rows together, its GPUs, layout, days,
    GPU-hours and cost the CLI's JSON (each row's `phases`); the totals' row notes the phases below. A comparison of
    no campaign has no such table."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver.get(f"{url}/?q=compare&scenario={CAMPAIGN}&gpu={','.join(COMPARED)}")
    shown = answered(driver)
    expected = cli_json("compare", CAMPAIGN, *(f"--gpu={gpu}" for gpu in COMPARED))
    assert shown["time_to_train_days"] == [r["time_to_train_days"] for r in expected]
    title = driver.find_element(By.ID, "title").text  # two rows, not "2 systems x 2 sizes"
    assert title == "Llama 3.1 405B, 15.6T tokens: 2 systems at their own sizes, ratios to the first row"
    beyond = [[bool(p["evidence"]["beyond"]) for p in r["phases"]] for r in expected]
    assert [any(b) for b in beyond] == [True, False]  # GB300's phases beyond the measured runs, marked as the CLI's
    assert [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#tables td.text")] == [
        "11 phases, each its own layout (below) *",
        "11 phases, each its own layout (below)",
    ]
    n_phases = len(expected[0]["phases"])
    phases = [[r["phases"][i] for r in expected] for i in range(n_phases)]  # the page's order: a phase's rows together
    assert shown["phases.phase"] == [p["phase"] for p in expected[0]["phases"]]
    for key in ("n_gpus", "time_to_train_days", "gpu_hours", "cost_usd"):
        assert shown[f"phases.{key}"] == [row[key] for phase in phases for row in phase], key
    assert phase_names(driver) == [
        name + (" [e]" if beyond[j][i] else "")
        for i in range(n_phases)
        for j, name in enumerate(["gb300-nvl72 bf16 on 2,048", "dgx-h100 bf16 on 4,096"])
    ]
    note = driver.find_element(By.CSS_SELECTOR, "#phases .evidence").text.splitlines()
    assert note[0].startswith("[e] beyond the measured runs") and len(note) > 1
    assert all(line.split(": ", 1)[0].endswith("(gb300-nvl72 bf16 on 2,048)") for line in note[1:])
    assert shown["phases.n_gpus"][:2] == [1024, 2048]  # the ramp on half the count, as the scenario's
    layouts = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#phases td.text")]
    assert len(layouts) == 2 * n_phases
    assert all(re.fullmatch(r"TP\d+ PP\d+ VP\d+ CP\d+ DP\d+ MBS\d+ ZeRO-\d.*", t) for t in layouts), layouts
    for key in ("time_to_train_days", "cost_usd"):  # the phases add up to each row's totals above
        assert [sum(column(driver, f"phases.{key}")[j::2]) for j in (0, 1)] == pytest.approx(shown[key], rel=1e-9)

    # The scenario unchosen on the same page: the form's own comparison, of no campaign, shows no phases.
    Select(driver.find_element(By.ID, "scenario")).select_by_value("")
    driver.find_element(By.ID, "run").click()
    WebDriverWait(driver, 60).until(lambda d: d.find_element(By.ID, "title").text.startswith("Llama 3.1 70B"))
    assert driver.find_elements(By.CSS_SELECTOR, "#phases *") == []


def test_a_campaign_planned_shows_the_chosen_count_and_each_phase(driver: Any, url: str) -> None:
    """A campaign planned showed each candidate's chosen count and totals only: each phase's lines are now below, at
    that count (the ramp on half of it), with losses as the candidate's days and cost are, adding up to them."""
    from selenium.webdriver.common.by import By

    driver.get(f"{url}/?q=plan&scenario={CAMPAIGN}&gpu=gb300,h100-sxm&deadline_days=120")
    shown = answered(driver)
    planned = cli_json("plan", CAMPAIGN, "--gpu", "gb300", "--gpu", "h100-sxm", "--deadline", "120d")["candidates"]
    assert shown["n_gpus"] == [c["n_gpus"] for c in planned]
    beyond = [[bool(p["evidence"]["beyond"]) for p in c["plan"]["phases"]] for c in planned]
    notes = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#tables td .note")]
    assert notes == [f"11 phases, each its own layout (below){' *' if any(b) else ''}" for b in beyond]
    n_phases = len(planned[0]["plan"]["phases"])
    assert phase_names(driver) == [
        f"{c['candidate']} on {c['n_gpus']:,}" + (" [e]" if beyond[j][i] else "")
        for i in range(n_phases)
        for j, c in enumerate(planned)
    ]
    rows = [c["plan"]["phases"][i] for i in range(n_phases) for c in planned]
    for key in ("n_gpus", "time_to_train_with_losses_days", "gpu_hours_with_losses", "cost_usd_with_losses"):
        assert shown[f"phases.{key}"] == [p[key] for p in rows], key
    assert [sum(shown["phases.cost_usd_with_losses"][j::2]) for j in (0, 1)] == pytest.approx(shown["cost_usd"])

    driver.get(f"{url}/?q=plan&model=llama3.1-8b&tokens=1T&gpu=h100-sxm&deadline_days=20")
    answered(driver)
    assert driver.find_elements(By.CSS_SELECTOR, "#phases *") == []
