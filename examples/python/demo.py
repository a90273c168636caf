"""The main job of isthmus (what `make demo` runs): list the devices, run every library kernel on
the default device (ISTHMUS_DEVICE to choose), check each against NumPy and compare speeds."""
import sys

from isthmus.cli.demo import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
