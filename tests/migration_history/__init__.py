"""The migrations of `catalog`, `jobs` and `review` as they were before the
workspaces, members and API tokens moved to `accounts`: the tests build a
database with them, fill it, then migrate it with the current migrations."""
