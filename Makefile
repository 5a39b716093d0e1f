# Convenience targets; each calls dev.py, which needs nothing but Python 3.11.
PYTHON ?= python3.11

.PHONY: help demo test setup
help:  ## list the targets
	@grep -E '^[a-z]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

setup:  ## create .venv and install relay with pinned dependencies
	$(PYTHON) dev.py setup

demo:  ## set up and run the demo (examples/demo.py)
	$(PYTHON) dev.py demo

test:  ## set up, then ruff, mypy and the whole test suite
	$(PYTHON) dev.py test
