# The README's two commands: `make demo` (the main job) and `make test` (every test).
# Both set up everything they need on a fresh machine: an OpenCL CPU driver where none is
# installed (the distribution's PoCL, see opencl-driver), a virtual environment with the package
# from PyPI's wheels, and the Java artifact built by Maven.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JAR_DIR := python/isthmus/java/lib
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' python/isthmus/_version.py)
JAVA_SRC := $(shell find java/src/main -type f 2>/dev/null) pom.xml
MVN    := mvn -q -B -ntp

.PHONY: demo test venv jar java-demo bench clean opencl-driver device-bundle llm-demo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# An OpenCL CPU device for machines without a GPU: the distribution's PoCL. (PyPI's PoCL build,
# the `pocl` extra, fails on CPUs its LLVM 14 cannot name: "unknown target CPU 'generic'".)
opencl-driver:
	@if ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then \
	  echo "no OpenCL driver found: installing PoCL (pocl-opencl-icd) from the distribution"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq pocl-opencl-icd; \
	fi

venv: $(STAMP)
$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[opencl,dev,ray]'
	touch $@

# ---- Java artifact (io.isthmus:isthmus), shipped inside the Python package ----
# (a wheel build makes its own through setup.py; this is for the editable install in .venv)
# `mvn install` also compiles the Java test classes and writes target/test-classpath.txt,
# which tests/crosslang puts on the hosted JVM's classpath.
JAVA_ALL := $(JAVA_SRC) $(shell find java/src/test -type f 2>/dev/null)
JAR_STAMP := target/.jar-installed
jar: $(JAR_STAMP)
$(JAR_STAMP): $(JAVA_ALL)
	$(MVN) install -DskipTests
	mkdir -p $(JAR_DIR)
	rm -f $(JAR_DIR)/isthmus-*
	cp target/isthmus-$(VERSION).jar target/isthmus-$(VERSION)-sources.jar target/isthmus-$(VERSION)-javadoc.jar $(JAR_DIR)/
	cp pom.xml $(JAR_DIR)/isthmus-$(VERSION).pom
	touch $@

# the Java example: a standalone Maven app on the installed artifact, run through the launcher
java-demo: venv jar
	cd examples/java && $(MVN) compile && ../../$(PY) -m isthmus.java -cp target/classes example.Scoring

# the LLM example (issue 30): a standalone Maven app streaming tokens from a tiny random Llama that
# examples/llm/demo.py writes, checked against the reference, with its speed
llm-demo: venv jar
	cd examples/llm && $(MVN) compile
	$(PY) examples/llm/demo.py

demo: opencl-driver venv jar
	$(PY) examples/python/demo.py
	$(MAKE) --no-print-directory java-demo
	$(MAKE) --no-print-directory llm-demo

# in parallel (pytest-xdist), each worker with its own program cache (tests/conftest.py), its own hosted
# JVM and Ray cluster where its tests need one
TEST_WORKERS ?= 2
test: opencl-driver venv jar
	$(PY) -m pytest tests -n $(TEST_WORKERS)

bench: venv jar
	$(PY) -m isthmus.cli bench --out benchmarks/results/latest

# For the lent GPU machine: .device/ (JRE, wheels, jar; ../shared/device/prepare.sh) and .devjava/
# (the JUnit classes and jars: that machine has no Maven). Then, with the device tool:
#   run(carry=[".device", ".devjava"], command="source .device/setup.sh && bash benchmarks/gpu_pass.sh test bench ...")
# The JRE from DEVICE_JDK (a 22+ JDK: tests/java's hosted JVMs), Liger as a peer of the benchmarks.
DEVICE_JDK ?= $(firstword $(wildcard /usr/lib/jvm/temurin-25-jdk-amd64) $(JAVA_HOME))
device-bundle: jar
	# jdk.compiler: the JRE runs single-file source programs (tests/java: java Probe.java)
	JDK=$(DEVICE_JDK) JRE_MODULES=java.base,java.logging,jdk.unsupported,java.management,jdk.zipfs,java.sql,java.xml,jdk.compiler \
	  bash ../shared/device/prepare.sh liger-kernel==0.8.5
	rm -rf .devjava && mkdir -p .devjava/m2jars .devjava/lib && cp -r target/test-classes .devjava/
	tr ':' '\n' < target/test-classpath.txt | grep '\.jar$$' | xargs -I{} cp {} .devjava/m2jars/
	# the whole artifact (pom, sources, javadoc) for `isthmus maven-install` there
	cp $(JAR_DIR)/isthmus-*.pom $(JAR_DIR)/isthmus-*.jar .devjava/lib/

clean:
	rm -rf $(VENV) target $(JAR_DIR) examples/java/target examples/llm/target
