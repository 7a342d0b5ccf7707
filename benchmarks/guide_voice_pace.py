"""The guide voice's pace against the plan, per language: the seconds eSpeak NG takes to
read the demo director's sentences over the seconds ``adstudio.speaking_time`` plans for
them, at the words a minute ``audio.guide_voice.WPM`` gives; and the words a minute that
would bring it nearest to ``--target`` (1 by default; within eSpeak's 80-450).

    .venv/bin/python -m benchmarks.guide_voice_pace [--language tr --language ar ...]
        [--target 1.0]

Two readings, each trimmed of eSpeak's leading and trailing silence as a scratch track
places it: ``tracks``, the sentences joined into two tracks as the director writes them
(opener, the calm or the energetic sentences, call to action), with the pauses eSpeak
makes between sentences, as a track is read; ``lines``, each sentence alone, without
them. The nearest rate is the tracks'. A ratio above 1: the guide voice reads slower than
planned, and a script planned to fit its slot runs past it in the scratch track; below 1,
it ends early. Exact on any machine.
"""

from __future__ import annotations

import argparse

from adstudio.speaking_time import spoken_seconds
from audio import guide_voice
from benchmarks._bench_db import write_results
from providers.demo_lines import LINES

BRAND = "Nova"
LOWEST, HIGHEST = 80, 450  # eSpeak NG's espeakRATE


def lines_of(language: str) -> list[str]:
    kinds = LINES[language]
    return [
        line.replace("{brand}", BRAND)
        for line in (*kinds.opener, *kinds.calm, *kinds.energetic, *kinds.cta)
    ]


def tracks_of(language: str) -> list[str]:
    kinds = LINES[language]
    return [
        kinds.join([opener, *sentences, cta]).replace("{brand}", BRAND)
        for opener, sentences, cta in zip(
            kinds.opener, (kinds.calm, kinds.energetic), kinds.cta, strict=True
        )
    ]


def ratio(language: str, wpm: int, texts: list[str]) -> float:
    """Seconds read over seconds planned, for ``texts`` in ``language`` at ``wpm``."""
    kept = guide_voice.WPM.get(language)
    guide_voice.WPM[language] = wpm
    try:
        rate = guide_voice.sample_rate()
        read = sum(len(guide_voice.synthesize(text, language=language)) / rate for text in texts)
    finally:
        if kept is None:
            guide_voice.WPM.pop(language)
        else:
            guide_voice.WPM[language] = kept
    return read / sum(spoken_seconds(text, language=language) for text in texts)


def nearest_wpm(language: str, start: int, target: float) -> tuple[int, float]:
    """The words a minute within eSpeak's range whose tracks' ratio is nearest ``target``:
    reading time is about inverse to the rate, so each step scales the rate by the ratio
    over the target, then the neighbours are tried."""
    texts = tracks_of(language)
    tried: dict[int, float] = {}
    wpm = start
    for _ in range(4):
        tried[wpm] = ratio(language, wpm, texts)
        wpm = max(LOWEST, min(HIGHEST, round(wpm * tried[wpm] / target)))
        if wpm in tried:
            break
    best = min(tried, key=lambda w: abs(tried[w] - target))
    for neighbour in (best - 1, best + 1):
        if LOWEST <= neighbour <= HIGHEST and neighbour not in tried:
            tried[neighbour] = ratio(language, neighbour, texts)
    best = min(tried, key=lambda w: abs(tried[w] - target))
    return best, tried[best]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", action="append", choices=sorted(LINES))
    parser.add_argument("--target", type=float, default=1.0, help="read / planned wanted")
    args = parser.parse_args()
    rows = []
    print("language  wpm  tracks  lines  nearest wpm  its tracks' ratio")
    for language in args.language or sorted(LINES):
        wpm = guide_voice.WPM.get(language, guide_voice.DEFAULT_WPM)
        tracks = ratio(language, wpm, tracks_of(language))
        lines = ratio(language, wpm, lines_of(language))
        best, best_ratio = nearest_wpm(language, wpm, args.target)
        rows.append(
            {
                "language": language,
                "wpm": wpm,
                "tracks": tracks,
                "lines": lines,
                "nearest": best,
                "nearestRatio": best_ratio,
            }
        )
        print(f"{language:8}  {wpm:3}  {tracks:6.3f}  {lines:5.3f}  {best:11}  {best_ratio:17.3f}")
    write_results("guide_voice_pace", {"target": args.target, "languages": rows})


if __name__ == "__main__":
    main()
