"""The `mini-fix` command line: parses arguments and wires components; the work lives in the stages."""
