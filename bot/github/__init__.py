"""GitHub: the gateway Protocol one job talks to, and its githubkit implementation."""
