"""A contact sheet of a ``redline play --video`` clip: evenly spaced frames side by side, for docs.

    python scripts/video_frames.py VIDEO.mp4 OUT.png [--frames 4] [--width 1920]

Reads the clip with PyAV, keeps ``--frames`` frames spread over it (first to last), scales each so the row is
``--width`` pixels wide and writes one PNG.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import av
from PIL import Image


def frames(video: Path, count: int) -> list[Image.Image]:
    """``count`` frames of ``video`` evenly spaced from its first to its last (fewer if the clip is shorter)."""
    if not video.is_file():
        raise SystemExit(f"video_frames.py: error: VIDEO: {video} is not a file (a `redline play --video` mp4)")
    with av.open(str(video)) as container:
        decoded = [f.to_image() for f in container.decode(video=0)]
    if not decoded:
        raise SystemExit(f"video_frames.py: error: {video} holds no video frame")
    picks = sorted({round(i * (len(decoded) - 1) / max(count - 1, 1)) for i in range(count)})
    return [decoded[i] for i in picks]


def sheet(images: list[Image.Image], width: int) -> Image.Image:
    """``images`` in one row, scaled so the row is ``width`` pixels wide."""
    w, h = images[0].size
    scale = width / (w * len(images))
    tile = (max(1, round(w * scale)), max(1, round(h * scale)))
    out = Image.new("RGB", (tile[0] * len(images), tile[1]))
    for i, image in enumerate(images):
        out.paste(image.resize(tile, Image.Resampling.LANCZOS), (i * tile[0], 0))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("video", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--frames", type=int, default=4, help="frames in the row (4)")
    parser.add_argument("--width", type=int, default=1920, help="the row's width [px] (1920)")
    args = parser.parse_args()
    sheet(frames(args.video, args.frames), args.width).save(args.out)
    print(args.out)


if __name__ == "__main__":
    main()
