"""The kernel library's OpenCL C sources and the CUDA prelude, installed as the package
``isthmus.opencl`` (package data; see ``isthmus.knobs.kernel_dir``). No Python code lives here."""
