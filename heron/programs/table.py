"""The built-in program policy table (``heron.programs.policy`` applies it) and the paths
the file tools never write.

Each entry lists what a program may be given; everything else is refused. The choices,
program by program, are explained in docs/tools.md ("Program policy"). In short:

- ``git``: the everyday subcommands, without the options that run a program
  (``--upload-pack``, ``--exec``, ``--extcmd``, ``--open-files-in-pager``, ``-x``), write a
  file (``--output``), leave the root (``-C``, ``--git-dir``, ``--work-tree``,
  ``--no-index``) or set configuration (``-c``, ``--config-env``, ``config`` writes). No
  global option but ``--no-pager``; network subcommands take a remote's *name*, never a
  URL. ``submodule``, ``bisect``, ``filter-branch``, ``difftool``, ``archive`` and the
  other subcommands that run programs are not on the list.
- ``pytest``, ``make``, ``npm``: the options of a normal run. They run the workspace's
  own code by design (tests, Makefile recipes, package.json scripts); what is refused is
  code from the command line (``make --eval``, ``VAR=value`` overrides, ``pytest -p
  plugin``, ``npm exec``, ``--script-shell``) and reaching outside the root
  (``--rootdir``, ``--basetemp``, ``-c FILE``, ``make -f /elsewhere``, ``npm --prefix``).
- ``ls``, ``cat``, ``grep``, ``rg``: reading options, without following symlinks
  (``ls -L``, ``grep -R``, ``rg -L``) or running programs (``rg --pre``, ``rg -z``).
- interpreters and launchers: refused; their arguments are code or another program.
"""

from __future__ import annotations

from typing import Any

from heron.programs.rules import Program

NUMBER = r"\d+"
#: A remote's name as ``git remote`` shows it: never a URL, a path or an option.
REMOTE = r"[A-Za-z0-9][A-Za-z0-9._-]*"


def flags(names: str) -> dict[str, Any]:
    """Options (named, separated by spaces) that take no value."""
    return dict.fromkeys(names.split(), "flag")


def optional(names: str) -> dict[str, Any]:
    """Options whose value is optional and, when given, glued on: ``--stat=80``."""
    return dict.fromkeys(names.split(), "optional")


def values(names: str) -> dict[str, Any]:
    """Options that take a value, glued on or as the next argument."""
    return dict.fromkeys(names.split(), "value")


def paths(names: str) -> dict[str, Any]:
    """Options whose value is a path, which must stay inside the root."""
    return dict.fromkeys(names.split(), "path")


def words(names: str) -> list[str]:
    return names.split()


def valued(match: str, names: str) -> dict[str, Any]:
    """Options taking a value that must match the regular expression ``match`` whole."""
    return {name: {"kind": "value", "match": match} for name in names.split()}


# -- git --------------------------------------------------------------------------------

GIT_DIFF = {
    **flags(
        "--shortstat --numstat --name-only --name-status --patch -p -u --no-patch"
        " -s --raw --no-color --summary --ignore-all-space -w"
        " --ignore-space-change -b --ignore-space-at-eol --ignore-blank-lines"
        " --check --no-renames --full-index --binary --minimal --patience"
        " --histogram --exit-code --quiet --compact-summary -R --text -a"
        " --no-textconv --no-ext-diff --function-context -W --no-prefix -z"
        " --ita-invisible-in-index",
    ),
    **optional(
        "--stat --dirstat --color --word-diff --color-moved --abbrev --relative"
        " --find-renames -M --find-copies -C --color-words",
    ),
    **values(
        "-U --unified --diff-filter --diff-algorithm --stat-width"
        " --stat-name-width --stat-count --word-diff-regex --inter-hunk-context"
        " --src-prefix --dst-prefix --anchored --find-object -S -G",
    ),
    **paths("-O"),
}
GIT_LOG = {
    **GIT_DIFF,
    **flags(
        "--oneline --all --graph --reverse --first-parent --no-merges --merges"
        " --follow --abbrev-commit --no-abbrev-commit --left-right --cherry-pick"
        " --cherry-mark --topo-order --date-order --author-date-order --boundary"
        " --full-history --simplify-merges --ancestry-path --no-decorate --source"
        " --use-mailmap --mailmap --parents --children --regexp-ignore-case -i"
        " --invert-grep --all-match --extended-regexp -E --fixed-strings -F"
        " --perl-regexp -P --basic-regexp --relative-date -m -c --cc -t -r --root"
        " --no-notes --no-walk",
    ),
    **optional("--decorate --pretty --branches --tags --remotes --expand-tabs"),
    **values(
        "-n --max-count --skip --since --after --until --before --author"
        " --committer --grep --min-parents --max-parents -L --format --date --glob"
        " --exclude --decorate-refs --decorate-refs-exclude --encoding",
    ),
}
GIT_REMOTE_OPTIONS = flags("-q --quiet -v --verbose --ipv4 -4 --ipv6 -6 --progress --no-progress")

GIT: dict[str, Any] = {
    "about": "the everyday subcommands; no global option but --no-pager",
    "options": flags("--no-pager --version"),
    "subcommands": {
        "status": {
            "options": {
                **flags(
                    "-s --short -b --branch --long -v --verbose -z --null --ahead-behind"
                    " --no-ahead-behind --show-stash --renames --no-renames --no-column",
                ),
                **optional("--porcelain -u --untracked-files --ignored --column"),
            },
        },
        "diff": {"options": {**GIT_DIFF, **flags("--cached --staged --merge-base")}},
        "log": {"options": GIT_LOG, "numeric": True},
        "show": {"options": GIT_LOG, "numeric": True},
        "shortlog": {
            "options": {
                **flags(
                    "-s --summary -n --numbered -e --email -c --committer --all --no-merges"
                    " --merges",
                ),
                **values("--since --until --after --before --author --group --format"),
            },
            "numeric": True,
        },
        "blame": {
            "options": {
                **flags(
                    "-w -e -s -l -t -f -n -p --porcelain --line-porcelain -b --root"
                    " --show-stats --show-name --show-number --show-email --incremental -c",
                ),
                **optional("-M -C --abbrev --color-lines --color-by-age"),
                **values("-L --since --date --ignore-rev"),
                **paths("--contents --ignore-revs-file"),
            },
        },
        "grep": {
            "options": {
                **flags(
                    "-n --line-number -i --ignore-case -w --word-regexp -v --invert-match -l"
                    " --files-with-matches --name-only -L --files-without-match -c --count -E"
                    " --extended-regexp -F --fixed-strings -G --basic-regexp -P --perl-regexp"
                    " --cached -I -h -H --full-name --heading --break -o --only-matching -q"
                    " --quiet -z --null --column --untracked --all-match --and --or --not -a"
                    " --text --no-color -W --function-context -p --show-function",
                ),
                **optional("--color"),
                **valued(
                    NUMBER,
                    "-A -B -C --context --after-context --before-context --max-depth -m"
                    " --max-count --threads",
                ),
                "-e": {"kind": "value", "pattern": True},
                "-f": {"kind": "path", "pattern": True},
            },
            "pattern_first": True,
        },
        "ls-files": {
            "options": {
                **flags(
                    "-c --cached -d --deleted -m --modified -o --others -i --ignored -s"
                    " --stage -u --unmerged -k --killed -z -t -v --directory"
                    " --no-empty-directory --exclude-standard --full-name --error-unmatch"
                    " --eol --deduplicate",
                ),
                **values("-x --exclude --exclude-per-directory --format"),
                **paths("-X --exclude-from"),
            },
        },
        "ls-tree": {
            "options": {
                **flags(
                    "-r -t -d -l --long -z --name-only --name-status --full-name --full-tree"
                    " --object-only",
                ),
                **optional("--abbrev"),
                **values("--format"),
            },
        },
        "rev-parse": {
            "options": {
                **flags(
                    "--verify --quiet -q --show-toplevel --show-prefix --show-cdup"
                    " --is-inside-work-tree --is-inside-git-dir --is-bare-repository"
                    " --is-shallow-repository --git-dir --absolute-git-dir --git-common-dir"
                    " --symbolic --symbolic-full-name --all",
                ),
                **optional("--abbrev-ref --short --branches --tags --remotes"),
            },
        },
        "rev-list": {"options": {**GIT_LOG, **flags("--count")}, "numeric": True},
        "describe": {
            "options": {
                **flags("--tags --all --always --long --exact-match --first-parent --contains"),
                **optional("--dirty --broken --abbrev"),
                **values("--match --exclude --candidates"),
            },
        },
        "merge-base": {
            "options": flags("--all --octopus --is-ancestor --independent --fork-point"),
        },
        "cat-file": {"options": flags("-t -s -e -p")},
        "show-ref": {
            "options": {
                **flags("--heads --tags -d --dereference --verify -q --quiet --head"),
                **optional("--hash -s --abbrev"),
            },
        },
        "for-each-ref": {
            "options": {
                **values("--format --sort --count --points-at"),
                **optional("--merged --no-merged --contains --no-contains"),
            },
        },
        "count-objects": {"options": flags("-v -H")},
        "version": {"options": flags("--build-options")},
        "branch": {
            "about": "list, create, rename or delete (-d) branches",
            "options": {
                **flags(
                    "-a --all -r --remotes -v --verbose --list -l --show-current -d --delete"
                    " -m --move --no-color --no-column",
                ),
                **optional(
                    "--merged --no-merged --contains --no-contains --color --column --abbrev"
                ),
                **values("--sort --format --points-at"),
            },
        },
        "tag": {
            "about": "list tags, or make a lightweight one",
            "options": {
                **flags("-l --list"),
                **optional("-n --contains --no-contains --merged --no-merged --points-at --column"),
                **values("--sort --format"),
            },
        },
        "init": {"options": {**flags("-q --quiet"), **values("-b --initial-branch")}},
        "add": {
            "options": {
                **flags(
                    "-A --all --no-all -u --update -N --intent-to-add -v --verbose -n"
                    " --dry-run -f --force --ignore-errors --ignore-missing --renormalize"
                    " --sparse",
                ),
                **valued(r"[+-]x", "--chmod"),
            },
        },
        "commit": {
            "options": {
                **flags(
                    "-a --all -q --quiet -v --verbose --amend --no-edit --allow-empty"
                    " --allow-empty-message -s --signoff -n --no-verify --dry-run --short"
                    " --porcelain --branch --no-status --only -o --include -i --reset-author"
                    " --no-gpg-sign",
                ),
                **values(
                    "-m --message --author --date --fixup --squash -C --reuse-message --cleanup",
                ),
                **paths("-F --file"),
            },
        },
        "restore": {
            "options": {
                **flags(
                    "--staged -S --worktree -W -q --quiet --ours --theirs -m --merge"
                    " --ignore-unmerged --overlay --no-overlay",
                ),
                **values("-s --source --conflict"),
            },
        },
        "switch": {
            "options": {
                **flags(
                    "-d --detach -q --quiet -m --merge --discard-changes --no-track --guess"
                    " --no-guess",
                ),
                **optional("-t --track"),
                **values("-c --create -C --force-create --orphan"),
            },
        },
        "checkout": {
            "options": {
                **flags("-q --quiet --detach -m --merge --ours --theirs --no-track"),
                **optional("-t --track"),
                **values("-b -B --orphan"),
            },
        },
        "stash": {
            "about": "push (the default), list, show, pop, apply, drop",
            "options": flags("-q --quiet"),
            "subcommands": {
                "list": {"options": flags("--oneline")},
                "show": {
                    "options": flags(
                        "--stat -p --patch --name-only --name-status -u --include-untracked"
                    ),
                },
                "push": {
                    "options": {
                        **flags(
                            "-u --include-untracked -a --all -k --keep-index --no-keep-index -q"
                            " --quiet --staged -S",
                        ),
                        **values("-m --message"),
                    },
                },
                "pop": {"options": flags("--index -q --quiet")},
                "apply": {"options": flags("--index -q --quiet")},
                "drop": {"options": flags("-q --quiet")},
            },
        },
        "mv": {"options": flags("-k -n --dry-run -v --verbose")},
        "rm": {
            "options": flags("--cached -r -q --quiet -n --dry-run --ignore-unmatch"),
        },
        "reset": {
            "options": flags("--soft --mixed --hard --keep --merge -q --quiet -N"),
        },
        "clean": {
            "options": {
                **flags("-n --dry-run -f --force -d -x -X -q --quiet"),
                **values("-e --exclude"),
            },
        },
        "merge": {
            "about": "built-in strategies only: -s/-X would run git-merge-<name> programs",
            "options": {
                **flags(
                    "--no-ff --ff-only --ff --no-commit --commit --squash --abort --continue"
                    " --quit --no-edit --stat -n --no-stat -q --quiet -v --verbose --autostash"
                    " --no-autostash --allow-unrelated-histories",
                ),
                **values("-m"),
            },
        },
        "rebase": {
            "about": "no --exec/-x, --interactive or strategies",
            "options": {
                **flags(
                    "--abort --continue --skip --quit --autostash --no-autostash -q --quiet"
                    " -v --verbose --root --keep-base",
                ),
                **values("--onto"),
            },
        },
        "cherry-pick": {
            "options": {
                **flags(
                    "--no-commit -n --continue --abort --skip --quit --no-edit --ff --allow-empty",
                ),
                **valued(NUMBER, "-m --mainline"),
            },
        },
        "revert": {
            "options": {
                **flags("--no-commit -n --continue --abort --skip --quit --no-edit"),
                **valued(NUMBER, "-m --mainline"),
            },
        },
        "config": {
            "about": "reading only: one key, or --list; never a value to write",
            "options": {
                **flags(
                    "--get --get-all --get-regexp --list -l --show-origin --show-scope"
                    " --name-only --null -z --local --includes --no-includes",
                ),
                **values("--type --default"),
            },
            "max_positionals": 1,
        },
        "remote": {
            "about": "list remotes and their URLs; no add or set-url",
            "options": flags("-v --verbose"),
            "subcommands": {
                "get-url": {"options": flags("--push --all"), "first": REMOTE},
                "show": {"options": flags("-n"), "first": REMOTE},
            },
        },
        "reflog": {
            "options": {**flags("--oneline"), **optional("--date"), **values("-n")},
            "numeric": True,
            "subcommands": {
                "show": {"options": {**flags("--oneline"), **values("-n")}, "numeric": True},
            },
        },
        "worktree": {
            "subcommands": {"list": {"options": flags("--porcelain -v -z")}},
        },
        "fetch": {
            "about": "from a configured remote, by name; no --upload-pack",
            "options": {
                **GIT_REMOTE_OPTIONS,
                **flags(
                    "--all --prune -p --prune-tags --tags -t --no-tags -n --dry-run --atomic"
                    " --unshallow --no-recurse-submodules --no-write-fetch-head --multiple",
                ),
                **values("--depth --deepen --shallow-since -j --jobs"),
            },
            "first": REMOTE,
        },
        "pull": {
            "about": "from a configured remote, by name; no --upload-pack or strategies",
            "options": {
                **GIT_REMOTE_OPTIONS,
                **flags(
                    "--ff-only --ff --no-ff --no-rebase --autostash --no-autostash --no-edit"
                    " --no-commit --commit --stat --no-stat --prune --tags --no-tags --all"
                    " --no-recurse-submodules",
                ),
                "--rebase": {"kind": "optional", "match": "false|true|merges"},
                **values("--depth"),
            },
            "first": REMOTE,
        },
        "push": {
            "about": "to a configured remote, by name; no --receive-pack, --exec or --force",
            "options": {
                **GIT_REMOTE_OPTIONS,
                **flags(
                    "--dry-run -n --tags --follow-tags --atomic --porcelain --delete -d"
                    " --prune --all --set-upstream --no-verify",
                ),
                **optional("--force-with-lease"),
            },
            "first": REMOTE,
        },
        "ls-remote": {
            "about": "of a configured remote, by name; no --upload-pack",
            "options": {
                **flags("-h --heads -t --tags --refs -q --quiet --exit-code --get-url --symref"),
                **values("--sort"),
            },
            "first": REMOTE,
        },
    },
}

# -- test runners and builds ------------------------------------------------------------

PYTEST: dict[str, Any] = {
    "about": "a normal test run; no plugins, config files, rootdir or basetemp of your choosing",
    "options": {
        **flags(
            "-q --quiet -v --verbose -x --exitfirst -s -l --showlocals --lf"
            " --last-failed --ff --failed-first --nf --new-first --sw --stepwise"
            " --sw-skip --stepwise-skip --co --collect-only --no-header --no-summary"
            " --strict-markers --strict-config --runxfail --setup-show --setup-plan"
            " --fixtures --markers --cache-show --cache-clear --doctest-modules"
            " --continue-on-collection-errors -h --help --version -V",
        ),
        **values("-k -m --ignore-glob --deselect-glob"),
        **paths("--deselect --ignore"),
        **valued("auto|long|short|line|native|no", "--tb"),
        **valued("[fEsxXpPaAwN]+", "-r"),
        **valued(NUMBER, "--maxfail --durations --timeout"),
        **valued(r"\d+(\.\d+)?", "--durations-min"),
        **valued("yes|no|auto", "--color --code-highlight"),
        **valued(r"\d+|auto|logical", "-n --numprocesses"),
        **valued("fd|sys|no|tee-sys", "--capture"),
        "-p": {"kind": "value", "match": r"no:[A-Za-z0-9_.-]+"},
    },
}

MAKE: dict[str, Any] = {
    "about": "targets of the workspace's Makefile; no --eval, no VAR=value overrides",
    "options": {
        **flags(
            "-k --keep-going -S --no-keep-going -s --silent --quiet -n --just-print"
            " --dry-run --recon -B --always-make -q --question -w --print-directory"
            " --no-print-directory -r --no-builtin-rules -R --no-builtin-variables"
            " --warn-undefined-variables --trace -i --ignore-errors -e"
            " --environment-overrides -v --version -h --help",
        ),
        **valued(NUMBER, "-j --jobs"),
        **valued(r"\d+(\.\d+)?", "-l --load-average"),
        **paths(
            "-f --file --makefile -C --directory -I --include-dir -o --old-file -W"
            " --what-if --assume-new --assume-old",
        ),
        "-O": {"kind": "optional", "match": "none|line|target|recurse"},
        "--output-sync": {"kind": "optional", "match": "none|line|target|recurse"},
    },
    # A VAR=value argument overrides any variable, SHELL and the commands recipes run.
    "match": r"[^=]+",
}

NPM_COMMON = {
    **flags(
        "--silent -s --quiet -q --if-present --ignore-scripts --json --offline"
        " --prefer-offline --no-audit --no-fund --no-color",
    ),
    **valued("silent|error|warn|notice|http|timing|info|verbose|silly", "--loglevel"),
    **valued("always|true|false", "--color"),
}
SCRIPT = r"[A-Za-z0-9_:.@/-]+"
NPM: dict[str, Any] = {
    "about": "the workspace's own scripts (test, start, run NAME) and listings; no exec, "
    "install or --script-shell",
    "options": {**NPM_COMMON, **flags("--version -v")},
    "bundling": False,
    "subcommands": {
        **{name: {"options": NPM_COMMON, "bundling": False} for name in ("test", "t", "start")},
        **{
            name: {"options": NPM_COMMON, "bundling": False, "first": SCRIPT}
            for name in ("run", "run-script")
        },
        **{
            name: {"options": {**NPM_COMMON, **flags("--all --long")}, "bundling": False}
            for name in ("ls", "list")
        },
        "outdated": {"options": NPM_COMMON, "bundling": False},
    },
}

# -- reading ----------------------------------------------------------------------------

LS: dict[str, Any] = {
    "about": "listing; no -L (it would follow symlinks out of the root)",
    "options": {
        **flags(
            "-l -a --all -A --almost-all -h --human-readable -R --recursive -1 -t -S"
            " -r --reverse -d --directory -F --classify -p -i --inode -s --size -n"
            " --numeric-uid-gid -G --no-group -o -g -X -U -v -c -u --full-time"
            " --group-directories-first -Q --quote-name -N --literal -m -x -C -b"
            " --escape -q --hide-control-chars",
        ),
        **optional("--color"),
        **valued("none|size|time|version|extension|width", "--sort"),
        **valued(NUMBER, "-w --width"),
        **values("-I --ignore --hide"),
    },
}
CAT: dict[str, Any] = {
    "options": flags(
        "-A --show-all -b --number-nonblank -e -E --show-ends -n --number -s"
        " --squeeze-blank -t -T --show-tabs -u -v --show-nonprinting",
    ),
}
GREP: dict[str, Any] = {
    "about": "searching; no -R (it follows symlinks)",
    "options": {
        **flags(
            "-r --recursive -n --line-number -i --ignore-case -w --word-regexp -x"
            " --line-regexp -v --invert-match -l --files-with-matches -L"
            " --files-without-match -c --count -E --extended-regexp -F --fixed-strings"
            " -G --basic-regexp -P --perl-regexp -h --no-filename -H --with-filename"
            " -o --only-matching -q --quiet --silent -s --no-messages -I -a --text -z"
            " --null-data -Z --null -b --byte-offset -T --initial-tab --no-ignore-case",
        ),
        **optional("--color --colour"),
        **valued(NUMBER, "-A -B -C --context --after-context --before-context -m --max-count"),
        **values("--include --exclude --exclude-dir --label"),
        **paths("--exclude-from"),
        "-e": {"kind": "value", "pattern": True},
        "--regexp": {"kind": "value", "pattern": True},
        "-f": {"kind": "path", "pattern": True},
        "--file": {"kind": "path", "pattern": True},
    },
    "pattern_first": True,
}
RG: dict[str, Any] = {
    "about": "searching; no --pre or -z (they run programs), no -L/--follow",
    "options": {
        **flags(
            "-i --ignore-case -S --smart-case -s --case-sensitive -w --word-regexp -x"
            " --line-regexp -v --invert-match -l --files-with-matches"
            " --files-without-match -c --count --count-matches -n --line-number -N"
            " --no-line-number -H --with-filename -I --no-filename --hidden"
            " --no-ignore -u --files -F --fixed-strings -o --only-matching --json"
            " --vimgrep --heading --no-heading -0 --null -q --quiet --no-messages"
            " --trim -U --multiline --stats --column -P --pcre2 -a --text -p --pretty"
            " --no-config --type-list",
        ),
        **values(
            "-g --glob --iglob -t --type -T --type-not -r --replace -E --encoding --max-filesize",
        ),
        **valued(
            NUMBER,
            "-A -B -C --context --after-context --before-context -m --max-count"
            " --max-depth -d -M --max-columns -j --threads",
        ),
        **valued("path|modified|accessed|created|none", "--sort --sortr"),
        **valued("never|auto|always|ansi", "--color"),
        **paths("--ignore-file"),
        "-e": {"kind": "value", "pattern": True},
        "--regexp": {"kind": "value", "pattern": True},
        "-f": {"kind": "path", "pattern": True},
        "--file": {"kind": "path", "pattern": True},
    },
    "pattern_first": True,
}

# -- refused unless the policy file declares them ---------------------------------------

INTERPRETER = "is an interpreter: its arguments (-c, -e, a script, a program text) are code."
INTERPRETERS = words(
    "sh bash dash zsh ksh mksh fish csh tcsh busybox python python2 python3 pypy"
    " pypy3 node nodejs deno bun ruby irb perl php lua luajit tclsh wish expect"
    " Rscript R julia pwsh powershell osascript awk gawk mawk nawk sed gdb vim vi nvim"
    " emacs ex"
)
LAUNCHER = "runs another program (or fetches and runs a package), past the allowlist."
LAUNCHERS = words(
    "env xargs sudo doas su runuser pkexec nohup nice ionice timeout time stdbuf"
    " setsid chroot unshare nsenter taskset chrt strace ltrace watch script flock"
    " systemd-run parallel npx pnpx bunx uvx pipx ssh"
)
OPERANDS = (
    "takes operands that name any file or program without a '-' (dd if=/etc/shadow, "
    "tar xfI ARCHIVE PROGRAM)."
)
SCHEDULER = "schedules commands to run later, outside Heron (crontab FILE, at, batch)."

_TABLE: dict[str, Any] = {
    "git": GIT,
    "pytest": PYTEST,
    "make": MAKE,
    "npm": NPM,
    "ls": LS,
    "cat": CAT,
    "grep": GREP,
    "rg": RG,
    **{name: {"refuse": INTERPRETER} for name in INTERPRETERS},
    **{name: {"refuse": LAUNCHER} for name in LAUNCHERS},
    **{name: {"refuse": OPERANDS} for name in ("dd", "tar")},
    **{name: {"refuse": SCHEDULER} for name in ("crontab", "at", "batch")},
}
#: The table as validated entries; ``load_policy`` starts from it.
BUILTIN: dict[str, Program] = {name: Program.model_validate(e) for name, e in _TABLE.items()}

#: Paths the file tools never write, with why: each runs code, for Heron's git or for the
#: user's own tools, without anyone asking to run the workspace's code. Matching rules:
#: ``Policy.protected_rule``. Reads are allowed.
EXECUTABLE_CONFIG: tuple[tuple[str, str], ...] = (
    (".git", "git's config and hooks run programs"),
    (".hg", "Mercurial's hgrc and hooks run programs"),
    (".gitmodules", "submodule URLs and update commands"),
    (".githooks", "a hooks folder (core.hooksPath)"),
    (".husky", "git hooks run by husky"),
    (".pre-commit-config.yaml", "pre-commit runs the commands it lists on every commit"),
    (".envrc", "direnv runs it on entering the folder"),
    (".vscode/tasks.json", "VS Code runs its tasks, some on opening the folder"),
    (".ssh", "keys and authorized_keys"),
    (".bashrc", "a shell startup file"),
    (".bash_profile", "a shell startup file"),
    (".bash_login", "a shell startup file"),
    (".profile", "a shell startup file"),
    (".zshrc", "a shell startup file"),
    (".zshenv", "a shell startup file"),
    (".zprofile", "a shell startup file"),
    (".zlogin", "a shell startup file"),
)
