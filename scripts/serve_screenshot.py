"""docs/serve.png: the page of `perfmodel serve` in a headless chromium, answering a comparison over sizes.

Also the server and browser the browser tests drive (tests/test_serve_browser.py): `serving()` runs the app on a free
port in a thread, `browser()` starts Debian's chromium through chromedriver.

    python scripts/serve_screenshot.py            # writes docs/serve.png
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHOWN = "/?q=compare&model=llama3.1-70b&tokens=2T&gpu=h100-sxm,b200:fp8,gb200:nvfp4&n_gpus=256,512,1024"
DRIVER = "chromedriver"


def missing() -> str | None:
    """Why the browser cannot run here, or None."""
    if shutil.which(DRIVER) is None or not (shutil.which("chromium") or shutil.which("google-chrome")):
        return "no chromium and chromedriver (Debian: apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "no selenium (pip install 'perfmodel[test]')"
    return None


@contextmanager
def serving() -> Iterator[str]:
    """The app served by uvicorn on a free local port, in a thread; yields its base URL."""
    import uvicorn

    from perfmodel.serve.app import app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def browser(downloads: Path | None = None, width: int = 1280, height: int = 1000) -> Iterator[Any]:
    """A headless chromium; files it downloads go to `downloads`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--hide-scrollbars",
                     f"--window-size={width},{height}"):  # fmt: skip
        options.add_argument(argument)
    if downloads is not None:
        options.add_experimental_option("prefs", {"download.default_directory": str(downloads)})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, for driver.get_log("browser")
    driver = webdriver.Chrome(service=Service(shutil.which(DRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def main() -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with serving() as url, browser(height=1200) as driver:
        driver.get(url + SHOWN)
        WebDriverWait(driver, 60).until(lambda d: d.find_element(By.ID, "result").is_displayed())
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1280, height + 140)  # the window frame besides the page
        driver.save_screenshot(str(ROOT / "docs" / "serve.png"))
    print("wrote docs/serve.png")


if __name__ == "__main__":
    main()
