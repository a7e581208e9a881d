"""One GitLab project as the gateway protocol (`bot.github.gateway.GitHubGateway`), through python-gitlab.

How GitLab's objects map onto the protocol's (GitHub's) shapes:
- numbers: an issue is its iid; a merge request is `ids.mr_number(iid)` (the two count separately on GitLab);
- roles: `members/all/:user_id` (inherited group members appear only there; 404: none) — Owner (50) `admin`,
  Maintainer (40) `maintain`, Developer (30) `write`, Reporter/Guest `read`;
- comments: notes, oldest first, system notes left out; the bot's own notes authored `<username>[bot]` as on GitHub;
- reactions: award emoji (GitHub's names translated); a PR: a merge request opened as `Draft:`, its description
  closing the issue with `Closes #<iid>`;
- CI evidence: the failed jobs of the commit's newest pipeline as check runs (`app` GITLAB_CI), their traces' tails
  as job logs; a review: the reviewer's unresolved diff threads on the MR (`review_id` is the reviewer's user id);
- git: the token as password under the username `oauth2`.

Each resource's methods live in a module of their own over one `project.ProjectApi`: members.py, notes.py,
merge_requests.py, pipelines.py, reviews.py and repository.py; the client and its bounded waits in instance.py.
"""

from __future__ import annotations

from bot.gitlab.instance import GitLabInstance, NoteParents
from bot.gitlab.members import Members
from bot.gitlab.merge_requests import MergeRequests
from bot.gitlab.notes import Notes
from bot.gitlab.pipelines import GITLAB_CI, TRACE_TAIL_BYTES, Pipelines
from bot.gitlab.repository import Repository
from bot.gitlab.reviews import Reviews

__all__ = ["GITLAB_CI", "TRACE_TAIL_BYTES", "GitLabForge", "GitLabGateway", "NoteParents"]


class GitLabForge(GitLabInstance):
    """The GitLab instance, and the gateway of each of its projects. One per worker process."""

    def for_repo(self, installation_id: int, repo: str) -> GitLabGateway:
        """The gateway for project `repo` (its path with namespace)."""
        return GitLabGateway(self, repo)


class GitLabGateway(Members, Notes, MergeRequests, Pipelines, Reviews, Repository):
    """GitHubGateway for one GitLab project: each resource's methods from its own module, over one `ProjectApi`."""
