"""A repository's `.github/mini-fix.yml`: its schema and how it is found and merged."""
