#!/usr/bin/python3
"""Checks that scripts/setup.sh installs every Debian package the build and the tests use.

A development machine may happen to have a package that a bare Debian 12 system lacks; a
build there passes and a newcomer's fails. This check does not trust what is installed:
it collects every file outside the source tree that the build and the tests used, finds
the Debian package that owns each (`dpkg -S`), and fails when that package is neither
in setup.sh's list nor in the dependency closure of a listed package (Depends and
Pre-Depends only, the first alternative of each, as apt installs on a bare system), nor
part of a bare system (essential and required packages, and the prerequisites setup.sh
names).

The files come from the build's own records, not from a list kept by hand:
  headers     `ninja -t deps`: every header each object was compiled with;
  link inputs the absolute library paths in build.ninja and CMakeCache.txt;
  libraries   `ldd` of every ELF file the build wrote;
  programs    the first word of each build command (`ninja -t commands`), each test's
              command (`ctest --show-only=json-v1`), CMakeCache's tools, the interpreters
              and commands of the project's shell scripts (CI, Makefile, scripts/);
  Python      the modules imported by the project's Python files and by Python embedded
              in C++ sources (R"PY(...)PY" blocks and `-c` one-liners), resolved with the
              interpreter the tests use;
  data files  absolute paths under /usr, /etc or /lib named in C++ sources.

Usage: check_deps.py --build-dir BUILD [--group NAME ...]
Exit status 0 when everything is covered, 1 otherwise (each missing package is named,
with the files that need it), 2 when the check itself cannot run.
"""

import argparse
import ast
import collections
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Words that start a shell command but are no program: keywords, builtins, make's.
SHELL_WORDS = {
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
    "esac", "in", "function", "select", "time", "!", "{", "}", "[[", "]]", "[", "test",
    "echo", "printf", "read", "cd", "exit", "return", "set", "unset", "export", "local",
    "declare", "shift", "source", ".", "eval", "exec", "trap", "wait", "true", "false",
    "break", "continue", "command", "type", "hash", "pwd", "let", "mapfile", "readarray",
    "getopts", "ulimit", "umask", "kill", "jobs", "fg", "bg", "builtin", "shopt", ":",
}


class CheckError(Exception):
    """The check could not run (a tool is missing, the build directory is not Ninja's)."""


def run(args, **kwargs):
    try:
        return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs).stdout
    except FileNotFoundError as e:
        raise CheckError(f"cannot run {args[0]}: {e}") from e
    except subprocess.CalledProcessError as e:
        raise CheckError(f"{' '.join(args[:3])} ... failed: {e.stderr.strip()[:500]}") from e


def outside_tree(path, build_dir):
    path = os.path.normpath(path)
    return os.path.isabs(path) and not any(
        path == d or path.startswith(d + os.sep) for d in (SOURCE_DIR, build_dir))


class Uses:
    """Files outside the tree, each with one example of what used it."""

    def __init__(self, build_dir):
        self.build_dir = build_dir
        self.files = {}
        self.counts = collections.Counter()
        self.problems = []  # things that are not files of any package

    def add(self, kind, path, why):
        path = os.path.normpath(path)
        if not outside_tree(path, self.build_dir) or not os.path.exists(path):
            return
        if path not in self.files:
            self.files[path] = (kind, why)
            self.counts[kind] += 1

    def program(self, name, why, must_exist=True):
        """A program named on a command line: a path, or a name looked up on PATH. A word of a
        shell script may be no command at all (an array element, a case pattern): those are
        checked only when such a program exists (must_exist=False)."""
        if not name or name in SHELL_WORDS or "=" in name or name.startswith(("$", "-")):
            return
        path = name if "/" in name else shutil.which(name)
        if path is not None:
            self.add("program", os.path.abspath(path), why)
        elif must_exist:
            self.problems.append(f"program '{name}' ({why}) is not on this machine's PATH")


# --- headers, link inputs, libraries, programs of the build ---------------------------

def collect_build(uses, build_dir):
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        raise CheckError(f"{build_dir} is not a Ninja build directory (no build.ninja)")
    target = None
    for line in run(["ninja", "-C", build_dir, "-t", "deps"]).splitlines():
        if line and not line[0].isspace():
            target = line.split(":", 1)[0]
        elif line.strip():
            uses.add("header", line.strip(), f"included by {target}")

    for line in run(["ninja", "-C", build_dir, "-t", "commands"]).splitlines():
        for word in first_words(line):
            uses.program(word, "a build command")

    library = re.compile(r"(/[^\s;:\"']+\.(?:a|so)(?:\.[0-9.]+)?)(?=[\s;:\"']|$)")
    for name in ("build.ninja", "CMakeCache.txt"):
        with open(os.path.join(build_dir, name), encoding="utf-8", errors="replace") as f:
            for path in library.findall(f.read()):
                uses.add("library", path, f"linked ({name})")
    with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"([\w\-.]+):FILEPATH=(/.*)$", line.strip())
            # CMake's own tool probes (CMAKE_NM, CMAKE_LINKER, ...) count only where a build
            # command runs them; the build tool (ninja) and what the project looks up
            # (capnp, ccache, Python) count.
            if m and m.group(1).startswith("CMAKE_") and m.group(1) != "CMAKE_MAKE_PROGRAM":
                continue
            if m and os.path.isfile(m.group(2)) and os.access(m.group(2), os.X_OK):
                uses.add("program", m.group(2), f"found by CMake ({m.group(1)})")

    for elf in elf_files(build_dir):
        for line in run(["ldd", elf]).splitlines():
            m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if m:
                uses.add("library", m.group(1), f"loaded by {os.path.relpath(elf, build_dir)}")


def elf_files(build_dir):
    for root, dirs, files in os.walk(build_dir):
        dirs[:] = [d for d in dirs if d != "CMakeFiles"]
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.access(path, os.X_OK) and ".so" not in name:
                continue
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield path


def first_words(command):
    """The program of each simple command in a shell command line."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return []
    words, expect = [], True
    for token in tokens:
        if set(token) <= set(";&|()"):
            expect = True
        elif expect:
            if "=" in token and not token.startswith("="):
                continue  # VAR=value before a command
            words.append(token)
            expect = token in ("sudo", "env", "exec", "nice", "time", "then", "do", "else")
    return words


# --- tests, scripts -----------------------------------------------------------------

def collect_tests(uses, build_dir):
    listing = json.loads(run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"]))
    uses.program("ctest", "runs the tests")
    for test in listing.get("tests", []):
        command = test.get("command") or []
        if command:
            uses.program(command[0], f"test {test['name']}")


def collect_scripts(uses):
    """The project's shell scripts and the Makefile's recipes: interpreters and commands."""
    paths = [os.path.join(SOURCE_DIR, ".ci", "run"), os.path.join(SOURCE_DIR, "Makefile")]
    scripts_dir = os.path.join(SOURCE_DIR, "scripts")
    paths += [os.path.join(scripts_dir, n) for n in sorted(os.listdir(scripts_dir))
              if n.endswith(".sh")]
    for path in paths:
        if not os.path.exists(path):
            continue
        rel = os.path.relpath(path, SOURCE_DIR)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        is_make = path.endswith("Makefile")
        if lines and lines[0].startswith("#!"):
            shebang = lines[0][2:].split()
            uses.program(shebang[0], f"interpreter of {rel}")
            if os.path.basename(shebang[0]) == "env" and len(shebang) > 1:
                uses.program(shebang[1], f"interpreter of {rel}")
        functions = {m.group(1) for line in lines
                     for m in [re.match(r"\s*(?:function\s+)?([\w-]+)\s*\(\)", line)] if m}
        in_array = False
        for line in lines:
            if is_make:
                if not line.startswith("\t"):
                    continue
                line = re.sub(r"\$\((\w+)\)", lambda m: make_variable(lines, m.group(1)), line)
                line = line.lstrip("\t@-")
            line = line.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            if in_array or re.match(r"\s*\w+=\([^)]*$", line):
                in_array = not line.endswith(")")  # a multi-line array holds data
                continue
            line = re.sub(r"\w+=\([^)]*\)", "", line)  # so does a one-line array
            line = re.sub(r"\$\(", "( ", line)  # commands in $(...) are commands too
            for word in first_words(line):
                if word not in functions and not word.startswith(("$", "\"$", "(")):
                    if "/" not in word or word.startswith("/"):
                        uses.program(word, rel, must_exist=False)


def make_variable(lines, name):
    for line in lines:
        m = re.match(rf"{name}\s*\??=\s*(.*)$", line)
        if m:
            return m.group(1)
    return ""


# --- Python ---------------------------------------------------------------------------

def python_of(build_dir):
    with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
        m = re.search(r"^Python_EXECUTABLE:[A-Z]+=(.*)$", f.read(), re.M)
    if not m:
        raise CheckError("CMakeCache.txt names no Python_EXECUTABLE")
    return m.group(1)


def imports_of(source, name):
    try:
        tree = ast.parse(source, filename=name)
    except SyntaxError as e:
        raise CheckError(f"{name}: Python that does not parse: {e}") from e
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            yield "." * node.level + (node.module or "")


class PythonModules:
    def __init__(self, uses, python):
        self.uses, self.python, self.seen, self.pending = uses, python, set(), {}

    def file(self, path):
        path = os.path.normpath(path)
        if path in self.seen:
            return
        self.seen.add(path)
        with open(path, encoding="utf-8") as f:
            self.source(f.read(), path, os.path.dirname(path))

    def source(self, text, where, directory):
        for module in imports_of(text, where):
            local = self.local_module(module, directory)
            if local:
                self.file(local)
            elif not module.startswith("."):
                self.pending.setdefault(module.split(".")[0], where)

    @staticmethod
    def local_module(module, directory):
        """The project's own file that `module` names, searched next to the importing file
        and in the folders above it (a script's folder is first on sys.path), then in
        python/ (the podsim package, on PYTHONPATH from the build tree), if any."""
        rel = module.lstrip(".")
        level = len(module) - len(rel)
        parts = rel.split(".") if rel else []
        bases = [directory]
        if level:
            for _ in range(level - 1):
                bases[0] = os.path.dirname(bases[0])
        else:
            while bases[-1].startswith(SOURCE_DIR + os.sep):
                bases.append(os.path.dirname(bases[-1]))
            bases.append(os.path.join(SOURCE_DIR, "python"))
        for base in bases:
            for k in range(len(parts), -1, -1):
                stem = os.path.join(base, *parts[:k])
                if k and os.path.isfile(stem + ".py"):
                    return stem + ".py"
                if (k or level) and os.path.isfile(os.path.join(stem, "__init__.py")):
                    return os.path.join(stem, "__init__.py")
        return None

    def resolve(self):
        """Where the tests' interpreter finds each imported top-level module."""
        if not self.pending:
            return
        names = sorted(self.pending)
        script = ("import importlib.util, json, sys\n"
                  "out = {}\n"
                  "for n in sys.argv[1:]:\n"
                  "    if n in sys.builtin_module_names: out[n] = 'builtin'; continue\n"
                  "    s = importlib.util.find_spec(n)\n"
                  "    out[n] = None if s is None else (s.origin or (list(s.submodule_search_locations or [None])[0]))\n"
                  "print(json.dumps(out))\n")
        found = json.loads(run([self.python, "-I", "-c", script, *names]))
        self.uses.program(self.python, "the tests' Python interpreter (PODSIM_PYTHON)")
        for name in names:
            origin = found.get(name)
            why = f"module '{name}' imported by {os.path.relpath(self.pending[name], SOURCE_DIR)}"
            if origin is None:
                self.uses.problems.append(f"{why}: {self.python} cannot find it")
            elif origin not in ("builtin", "frozen"):
                self.uses.add("python", origin, why)


def collect_python(uses, build_dir):
    modules = PythonModules(uses, python_of(build_dir))
    for root, dirs, files in os.walk(SOURCE_DIR):
        dirs[:] = [d for d in dirs if not d.startswith(".") and
                   not os.path.join(root, d).startswith(build_dir) and
                   not os.path.exists(os.path.join(root, d, "CMakeCache.txt"))]
        for name in files:
            path = os.path.join(root, name)
            if name.endswith(".py"):
                modules.file(path)
            elif name.endswith((".cc", ".h")):
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for block in re.findall(r'R"PY\((.*?)\)PY"', text, re.S):
                    modules.source(block, path, root)
                for line in re.findall(r'-c \\"(.*?)\\"', text):
                    modules.source(line.replace("\\\\", "\\"), path, root)
                for data in re.findall(r'"((?:/usr|/etc|/lib)/[^"\s]+)"', text):
                    uses.add("data", data, f"read by {os.path.relpath(path, SOURCE_DIR)}")
    modules.resolve()


# --- packages -----------------------------------------------------------------------

def owners(paths):
    """Debian package of each path; a path dpkg does not know is tried as its real path."""
    result, unknown = {}, list(paths)
    for attempt in range(2):
        if not unknown:
            break
        queries = {p: (os.path.realpath(p) if attempt else p) for p in unknown}
        names = set(queries.values()) | {usr_merged(q) for q in queries.values()}
        out = subprocess.run(["dpkg-query", "-S", *sorted(names)],
                             capture_output=True, text=True).stdout
        owner = {}
        for line in out.splitlines():
            if ": " not in line or line.startswith("diversion "):
                continue
            pkgs, path = line.rsplit(": ", 1)
            owner[path] = pkgs.split(",")[0].strip().split(":")[0]
        for p, q in queries.items():
            if q in owner or usr_merged(q) in owner:
                result[p] = owner.get(q) or owner[usr_merged(q)]
        unknown = [p for p in unknown if p not in result]
    return result, unknown


def usr_merged(path):
    """/bin/x and /usr/bin/x are one file on Debian 12; dpkg knows the name it shipped."""
    return path[4:] if path.startswith("/usr/") else "/usr" + path


def setup_list(setup, *args):
    return run([setup, *args]).split()


def closure(roots):
    """Packages apt installs for `roots` on a bare system: Depends and Pre-Depends, the first
    alternative of each group; a virtual package counts only when one package provides it.
    One `apt-cache depends --recurse` gives the graph (it follows every alternative)."""
    out = run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
               "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", *sorted(roots)])
    graph = collections.defaultdict(list)  # package -> [first alternative's candidates]
    package, group_open, chosen = None, False, None
    for line in out.splitlines():
        m = re.match(r"\s+(\|?)(?:Depends|PreDepends): (\S+)", line)
        if not line.startswith(" "):
            package, group_open, chosen = line.strip(), False, None
        elif m:
            starts_group = not group_open
            group_open = m.group(1) == "|"
            if starts_group:
                chosen = []
                graph[package].append(chosen)
                chosen.append(m.group(2))
            else:
                chosen = None
        elif line.startswith("    ") and chosen is not None and chosen[0].startswith("<"):
            chosen.append(line.strip())  # a provider of the virtual package
    seen, frontier = set(), [r for r in roots]
    while frontier:
        name = frontier.pop()
        if name in seen:
            continue
        seen.add(name)
        for candidates in graph.get(name, []):
            if not candidates[0].startswith("<"):
                frontier.append(candidates[0])
            elif len(candidates) == 2:
                frontier.append(candidates[1])
    return {name.split(":")[0] for name in seen}


def bare_system():
    out = run(["dpkg-query", "-W", "-f=${Package} ${Essential} ${Priority}\n"])
    return {line.split()[0] for line in out.splitlines()
            if line.split()[1:2] == ["yes"] or line.split()[2:3] == ["required"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--group", action="append", default=[],
                        help="also count this package group of setup.sh (e.g. sanitize)")
    parser.add_argument("--setup", default=os.path.join(SOURCE_DIR, "scripts", "setup.sh"),
                        help="the set-up script whose lists count (for the check's own test)")
    parser.add_argument("--verbose", action="store_true", help="print every file and owner")
    args = parser.parse_args()
    build_dir = os.path.abspath(args.build_dir)

    uses = Uses(build_dir)
    collect_build(uses, build_dir)
    collect_tests(uses, build_dir)
    collect_scripts(uses)
    collect_python(uses, build_dir)

    listed = setup_list(args.setup, "--list", *args.group)
    prerequisites = setup_list(args.setup, "--prerequisites")
    allowed = closure(set(listed) | set(prerequisites) | bare_system())
    owner, unowned = owners(uses.files)

    missing = collections.defaultdict(list)
    for path, package in sorted(owner.items()):
        if args.verbose:
            print(f"{package:32} {path}  ({uses.files[path][1]})")
        if package not in allowed:
            missing[package].append(path)
    failed = bool(missing or unowned or uses.problems)
    for package, paths in sorted(missing.items()):
        print(f"error: Debian package '{package}' is used but scripts/setup.sh does not install "
              f"it (nor anything that depends on it): add it to setup.sh's list. It owns:")
        for path in paths[:5]:
            print(f"  {path}  ({uses.files[path][1]})")
        if len(paths) > 5:
            print(f"  ... and {len(paths) - 5} more")
    for path in sorted(unowned):
        print(f"error: {path} ({uses.files[path][1]}) belongs to no Debian package: a bare "
              f"system will not have it; use a file from a Debian package instead")
    for problem in uses.problems:
        print(f"error: {problem}")

    used = collections.Counter(owner.values())
    unused = sorted(set(listed) - set(used))
    counts = ", ".join(f"{uses.counts[k]} {noun}" for k, noun in (
        ("header", "headers"), ("library", "libraries"), ("program", "programs"),
        ("python", "Python modules"), ("data", "data files")))
    print(f"check_deps: {counts} outside the tree, from {len(used)} Debian packages; "
          f"setup.sh lists {len(listed)} (+{len(prerequisites)} prerequisites)")
    if unused:
        print(f"note: listed in setup.sh, no file of theirs used directly (metapackages, or unused): {' '.join(unused)}")
    if failed:
        print("check_deps: FAILED: a bare Debian 12 system set up by scripts/setup.sh "
              "could not build or test podsim")
        return 1
    print("check_deps: every file comes from a package that scripts/setup.sh installs")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CheckError as e:
        print(f"check_deps: cannot check: {e}", file=sys.stderr)
        sys.exit(2)
