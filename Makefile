# The README's two commands: `make demo` (the main job) and `make test` (every test).
# Both set up everything they need on a fresh machine: a virtual environment with the
# package and PoCL from PyPI, and the Java artifact built by Maven.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JAR_DIR := python/isthmus/java/lib
JAVA_SRC := $(shell find java/src/main -type f 2>/dev/null) pom.xml
MVN    := mvn -q -B -ntp

.PHONY: demo test venv jar bench clean opencl-driver
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# An OpenCL CPU device for machines without a GPU: the distribution's PoCL. (PyPI's PoCL build,
# the `pocl` extra, fails on CPUs its LLVM 14 cannot name: "unknown target CPU 'generic'".)
opencl-driver:
	@if ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then \
	  echo "no OpenCL driver found: installing PoCL (pocl-opencl-icd) from the distribution"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq pocl-opencl-icd; \
	fi

venv: $(STAMP)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[opencl,dev]'
	touch $@

# ---- Java artifact (io.isthmus:isthmus), shipped inside the Python package ----
jar: $(JAR_DIR)/.built
$(JAR_DIR)/.built: $(JAVA_SRC)
	$(MVN) install -DskipTests
	mkdir -p $(JAR_DIR)
	rm -f $(JAR_DIR)/*.jar
	cp target/isthmus-*[0-9T].jar $(JAR_DIR)/ 2>/dev/null || cp $$(ls target/isthmus-*.jar | grep -v -E 'sources|javadoc') $(JAR_DIR)/
	touch $@

demo: opencl-driver venv jar
	$(PY) examples/python/demo.py

test: opencl-driver venv jar
	$(PY) -m pytest tests

bench: venv jar
	$(PY) -m isthmus.cli bench

clean:
	rm -rf $(VENV) target $(JAR_DIR)
