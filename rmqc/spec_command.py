"""``rmqc spec list | show ID | coverage [--strict] [--area A]``."""
from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from spec import versions
from spec.coverage import compute_coverage
from spec.loader import SpecError, load_spec


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("spec", help="list, show and check coverage of the spec")
    parser.add_argument("--spec-dir", default=None, help="a folder of behaviour files (default: the packaged spec)")
    spec_sub = parser.add_subparsers(dest="spec_command", required=True)
    p_list = spec_sub.add_parser("list", help="one line per behaviour: ID, area, title")
    p_list.add_argument("--area", action="append", help="only these areas (repeatable)")
    p_show = spec_sub.add_parser("show", help="everything the spec says about one behaviour")
    p_show.add_argument("id")
    p_show.add_argument("--version", default=None,
                        help=f"what holds in this release ({', '.join(versions.COVERED)}, or develop)")
    p_cov = spec_sub.add_parser("coverage", help="reference rule and tests per behaviour")
    p_cov.add_argument("--strict", action="store_true",
                       help="exit 1 on a behaviour without a rule, model code (unless not modelled) or a test, a citation "
                            "of an unknown ID, or a range citation in the model")
    p_cov.add_argument("--area", action="append", help="only these areas (repeatable)")
    p_cov.add_argument("--gaps", action="store_true", help="print only the behaviours with gaps")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        spec = load_spec(Path(args.spec_dir) if args.spec_dir else None)
    except SpecError as exc:
        print(f"rmqc spec: error: {exc}", file=sys.stderr)
        return 2
    areas = set(args.area) if getattr(args, "area", None) else None
    if areas:
        unknown = areas - set(spec.areas)
        if unknown:
            print(f"rmqc spec: error: unknown area {', '.join(sorted(unknown))}; known: {', '.join(sorted(spec.areas))}",
                  file=sys.stderr)
            return 2
    if args.spec_command == "list":
        for b in spec.behaviours.values():
            if not areas or b.area in areas:
                print(f"{b.id:<14} {b.area:<11} {b.title}")
        return 0
    if args.spec_command == "show":
        try:
            b = spec.get(args.id)
        except SpecError as exc:
            print(f"rmqc spec: error: {exc}", file=sys.stderr)
            return 2
        print(f"{b.id} — {b.title}  [{b.area}]  ({b.file}:{b.line})")
        print(f"  holds: {versions.describe(b.since, b.until)}"
              + "".join(f"; {versions.describe(v.get('since'), v.get('until'))}: a variant" for v in b.variants))
        if b.sdk:
            print(f"  SDK habit: the {b.sdk['client']} client, "
                  f"{versions.describe(b.sdk.get('since'), b.sdk.get('until'))} ({b.sdk['source']})")
        if args.version is not None:
            try:
                present = b.holds_at(args.version)
            except ValueError as exc:
                print(f"rmqc spec: error: --version: {exc}", file=sys.stderr)
                return 2
            if not present:
                print(f"  in {args.version}: does not hold ({versions.describe(b.since, b.until)})")
                return 0
            variant = b.variant_at(args.version)
            if variant is not None:
                print(f"  in {args.version} ({versions.describe(variant.get('since'), variant.get('until'))},"
                      f" {variant['source']}):")
                print(textwrap.indent(" ".join(variant["statement"].split()), "    "))
                if variant.get("defaults"):
                    print("    defaults: " + ", ".join(f"{k}={v}" for k, v in variant["defaults"].items()))
            else:
                print(f"  in {args.version}: as stated")
        print(textwrap.indent(b.statement, "  "))
        for profile, exp in b.profiles.items():
            print(f"  {profile}: " + (exp["expect"] if exp["applies"] else f"not applicable ({exp['reason']})"))
        if b.defaults:
            print("  defaults: " + ", ".join(f"{k}={v}" for k, v in b.defaults.items()))
        for seed in b.sources.get("seeds", []):
            print(f"  seed: {seed['file']} — {seed['section']}")
        for up in b.sources.get("upstream", []):
            print(f"  upstream: {up}")
        for doc in b.sources.get("docs", []):
            print(f"  docs: {doc}")
        if b.vectors:
            print("  vectors: " + " ".join(b.vectors.split()))
        for d in (b.divergences_at(args.version) if args.version else b.divergences):
            print(f"  divergence {d['claim']}: docs say {d['docs_say']!r}; held by {', '.join(d['held_by'])}")
        coverage = compute_coverage(spec)
        model = coverage.model.get(b.id) or ([f"- (not modelled: {b.not_modelled})"] if b.not_modelled else [])
        for label, cited in (("reference rule", coverage.rules.get(b.id, [])), ("model code", model),
                             ("tests", coverage.tests.get(b.id, [])), ("scenarios", coverage.scenarios.get(b.id, []))):
            print(f"  {label} ({len(cited)}):" if cited else f"  {label}: none")
            for where in cited:
                print(f"    {where}")
        return 0
    coverage = compute_coverage(spec)
    gaps = coverage.gaps(spec, areas)
    for b in spec.behaviours.values():
        if areas and b.area not in areas:
            continue
        rules = coverage.rules.get(b.id, [])
        model = coverage.model.get(b.id, [])
        tests = coverage.tests.get(b.id, [])
        if args.gaps and b.id not in gaps:
            continue
        status = "ok " if b.id not in gaps else "GAP"
        missing = f"  (no {' and no '.join(gaps[b.id])})" if b.id in gaps else ""
        print(f"{status} {b.id:<14} rules: {', '.join(rules) or '-'}")
        print(f"    {'':<14} model: {', '.join(model[:3]) + (' …' if len(model) > 3 else '') if model else ('not modelled' if b.not_modelled else '-')}")
        print(f"    {'':<14} tests: {len(tests)}{(' — ' + ', '.join(tests[:3]) + (' …' if len(tests) > 3 else '')) if tests else ''}{missing}")
    for line in coverage.unknown_citations:
        print(f"UNKNOWN ID {line}")
    for line in coverage.range_citations:
        print(f"RANGE {line}: the model cites exact IDs")
    total = sum(1 for b in spec.behaviours.values() if not areas or b.area in areas)
    print(f"{total - len(gaps)}/{total} behaviours have a reference rule, model code (unless not modelled) and a "
          f"test; {len(gaps)} gaps; {len(coverage.unknown_citations)} unknown citations; "
          f"{len(coverage.range_citations)} range citations in the model")
    if args.strict and (gaps or coverage.unknown_citations or coverage.range_citations):
        return 1
    return 0
