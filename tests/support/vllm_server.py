"""The real vLLM server of the `realmodel` tier (scripts/ensure-vllm.sh), and what it says about itself.

The tests read vLLM's own accounts, not ours: its Prometheus counters at /metrics (prefix-cache queries and hits,
in tokens) and its access log (one line per HTTP request, with the status it answered).
"""

from __future__ import annotations

import re
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "ensure-vllm.sh"
CHAT_LINE = re.compile(r'"POST /v1/chat/completions HTTP/[0-9.]+" (\d{3})')


@dataclass(frozen=True)
class VllmServer:
    """Where the server listens, the name it serves, and the files it keeps."""

    api_base: str
    model: str
    api_key: str
    max_model_len: int
    block_size: int
    log_file: Path

    @property
    def litellm_name(self) -> str:
        """The production path's model name."""
        return f"hosted_vllm/{self.model}"

    def counters(self) -> dict[str, float]:
        """vLLM's counters now, summed over engines: `name_total` → value."""
        url = self.api_base.removesuffix("/v1") + "/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        totals: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
        return totals

    def log_mark(self) -> int:
        """A position in the access log; `chat_requests(mark)` counts what came after it."""
        return self.log_file.stat().st_size

    def chat_requests(self, mark: int) -> list[int]:
        """The status of each chat-completions request the server logged after `mark`, in order."""
        with self.log_file.open("rb") as log:
            log.seek(mark)
            text = log.read().decode(errors="replace")
        return [int(status) for status in CHAT_LINE.findall(text)]


def script(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run scripts/ensure-vllm.sh with `args`."""
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)


def describe() -> VllmServer:
    """The running server, from `ensure-vllm.sh env`."""
    values = dict(line.split("=", 1) for line in script("env").stdout.splitlines() if "=" in line)
    return VllmServer(
        api_base=values["API_BASE"],
        model=values["MODEL"],
        api_key=Path(values["API_KEY_FILE"]).read_text().strip(),
        max_model_len=int(values["MAX_MODEL_LEN"]),
        block_size=int(values["BLOCK_SIZE"]),
        log_file=Path(values["LOG_FILE"]),
    )
