"""CI evidence from GitLab: the failed jobs of a commit's newest pipeline as check runs, their traces' tails as job
logs (cleaned by `bot.gitlab.traces`)."""

from __future__ import annotations

import requests

from bot.github.gateway import CheckRun
from bot.github.repo import log_text, tail_of
from bot.gitlab.errors import GitLabError
from bot.gitlab.project import ProjectApi
from bot.gitlab.traces import clean_trace

GITLAB_CI = "gitlab-ci"  # CheckRun.app of a GitLab CI job: its id is the job's, its log the job's trace
TRACE_TAIL_BYTES = 1 << 20  # as GitHub's job logs (bot/github/repo.py)
TRACE_READ_BYTES = 64 << 20


class Pipelines(ProjectApi):
    def check_runs(self, ref: str) -> list[CheckRun]:
        """The failed jobs of the commit's newest pipeline (jobs allowed to fail left out), as check runs."""
        pipelines = self._list("listing pipelines", "/pipelines", sha=ref, order_by="id", sort="desc")
        if not pipelines:
            return []
        newest = max(pipelines, key=lambda p: int(p["id"]))
        jobs = self._list("listing a pipeline's jobs", f"/pipelines/{int(newest['id'])}/jobs", **{"scope[]": "failed"})
        return [
            CheckRun(int(j["id"]), str(j.get("name") or ""), "failure", GITLAB_CI, str(j.get("failure_reason") or ""))
            for j in jobs
            if j.get("status") == "failed" and not j.get("allow_failure")
        ]

    def check_annotations(self, check_run_id: int) -> list[str]:
        """GitLab CI jobs have no annotations."""
        return []

    def job_log(self, job_id: int) -> str:
        """The end of a job's trace (its last TRACE_TAIL_BYTES, read no further than TRACE_READ_BYTES), with its
        ANSI colours and section markers stripped."""
        resp = self.forge.call(
            "reading a job's trace",
            lambda: self.forge.gl.http_get(f"{self._p}/jobs/{job_id}/trace", streamed=True, raw=True),
        )
        try:
            kept, left_out, whole = tail_of(resp.iter_content(64 << 10), TRACE_TAIL_BYTES, TRACE_READ_BYTES)
        except requests.RequestException as exc:
            raise GitLabError(f"reading a job's trace: {type(exc).__name__}") from None
        finally:
            resp.close()
        return clean_trace(log_text(kept, cut=left_out > 0, whole=whole))
