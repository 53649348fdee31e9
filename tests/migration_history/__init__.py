"""The migrations of `catalog`, `jobs` and `review` as they were before the
workspaces, members and API tokens moved to `accounts`: the tests build
databases with them, fill them, then migrate them with the current
migrations."""
