"""GitLab (self-managed and gitlab.com) as a second forge: its webhooks become the same jobs, and its API sits
behind the same gateway protocol the pipeline uses for GitHub."""
