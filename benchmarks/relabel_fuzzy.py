"""How long relabel's fuzzy step takes to find a long gold text with one character edited.

A gold chunk of N characters (sentences of random common Chinese characters, seeded) is renamed
and one character in its middle changed, so the old text is contained nowhere and the fuzzy step
(anchor.py, step 3) must find it; the corpus also holds the old text's sentences in reverse order
(every trigram shared, no good alignment: the fuzzy step must compare it and turn it down) and 200
other chunks of 300 characters. The
time is that of one `Matcher.anchor` of the old text (the corpus prepared once), the median of
`--repeat` runs, with the proposal it gives.
Usage: python benchmarks/relabel_fuzzy.py [--lengths 1000,3000,6000,18000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

from pytest_ragretrieval.evalset.records import Chunk
from pytest_ragretrieval.labels.anchor import Matcher

CHARACTERS = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴落"


def text(length: int, rng: random.Random) -> str:
    """`length` characters in sentences of 8 to 30 characters, each ending with 。."""
    found: list[str] = []
    while len(found) < length:
        found += [rng.choice(CHARACTERS) for _ in range(rng.randint(8, 30))] + ["。"]
    return "".join(found[:length])


def corpus(length: int, seed: int = 7) -> tuple[str, list[Chunk]]:
    """The old gold text and today's corpus: the text renamed with its middle character changed, and others."""
    rng = random.Random(seed)
    old = text(length, rng)
    middle = length // 2
    edited = old[:middle] + ("甲" if old[middle] != "甲" else "乙") + old[middle + 1:]
    chunks = [Chunk(f"other-{n:03d}", text(300, rng)) for n in range(200)]
    chunks.insert(100, Chunk("gold-renamed", edited))
    chunks.insert(50, Chunk("reordered", "。".join(reversed(old.split("。")))))
    return old, chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="1000,3000,6000,18000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("characters  seconds (median)  proposal")
    for length in (int(value) for value in args.lengths.split(",")):
        old, chunks = corpus(length)
        times = []
        for _ in range(args.repeat):
            matcher = Matcher(chunks)
            start = time.perf_counter()
            found = matcher.anchor(old)
            times.append(time.perf_counter() - start)
        print(f"{length:>10}  {statistics.median(times):>16.3f}  {', '.join(found.chunks)} ({found})", flush=True)


if __name__ == "__main__":
    main()
