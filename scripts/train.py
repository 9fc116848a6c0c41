"""`redline train` as a script: `isaaclab.sh -p scripts/train.py --task Redline-Cartpole ...` or any Python 3.12."""

import sys

import _bootstrap  # noqa: F401  (puts source/ and tasks/ on sys.path when redline is not installed)
from redline.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
