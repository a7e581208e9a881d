#!/bin/sh
# Writes the Maven version aliases (maven-aliases.txt) under $1 as poms, each resolving a pinned version to the
# version Debian's repository ($3, default /usr/share/maven-repo) has: a relocation pom, or for a BOM a real BOM
# managing Debian's JUnit 5 artifacts. Plus plexus-utils 1.1: Maven adds that version to every old plugin
# (maven-clean-plugin 2.5, the default) and Debian has only 3.x, so it is Debian's jar under the old name (a
# relocation is not followed for that injected dependency).
set -eu
root="$1" aliases="$2" debian="${3:-/usr/share/maven-repo}"
lists="$(mktemp -d)"
trap 'rm -rf "$lists"' EXIT

path() { echo "$debian/$(echo "$1" | tr . /)/$2"; }
# The newest real version Debian has of group:artifact (its repository also has a "debian" version); empty if none.
debian_version() {
    [ -d "$(path "$1" "$2")" ] || return 0
    ls "$(path "$1" "$2")" | grep -vx debian | sort -V | tail -n 1
}
pom() {  # group artifact version body
    dir="$root/$(echo "$1" | tr . /)/$2/$3"
    mkdir -p "$dir"
    printf '<project>\n  <modelVersion>4.0.0</modelVersion>\n  <groupId>%s</groupId>\n  <artifactId>%s</artifactId>\n  <version>%s</version>\n%s</project>\n' \
        "$1" "$2" "$3" "$4" >"$dir/$2-$3.pom"
}
# Debian's JUnit 5 artifacts at Debian's versions, as a BOM's dependencyManagement.
junit_bom_body() {
    echo "  <packaging>pom</packaging>"
    echo "  <dependencyManagement><dependencies>"
    for group in org.junit.jupiter org.junit.platform org.junit.vintage; do
        [ -d "$(path "$group" "")" ] || continue
        for artifact in $(ls "$(path "$group" "")"); do
            version="$(debian_version "$group" "$artifact")"
            [ -n "$version" ] || continue
            printf '    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n' \
                "$group" "$artifact" "$version"
        done
    done
    echo "  </dependencies></dependencyManagement>"
}
expand() {  # versions with @name lists expanded
    for token in "$@"; do
        case "$token" in
            @*) cat "$lists/${token#@}" ;;
            *) echo "$token" ;;
        esac
    done
}
grep -v '^#' "$aliases" | while read -r first second rest; do
    case "$first" in
        '') continue ;;
        @*) echo "$second $rest" | tr ' ' '\n' | grep -v '^$' >"$lists/${first#@}"; continue ;;
    esac
    group="$first" artifact="$second" kind="${rest%% *}" versions="${rest#* }"
    case "$kind" in
        '*')
            target="$(debian_version "$group" "$artifact")"
            if [ -z "$target" ]; then
                echo "maven-aliases: Debian has no $group:$artifact; no aliases for it" >&2
                continue
            fi
            body="  <distributionManagement><relocation><version>$target</version></relocation></distributionManagement>
" ;;
        bom) body="$(junit_bom_body)
" ;;
        *) echo "maven-aliases: unknown kind $kind for $group:$artifact" >&2; exit 1 ;;
    esac
    # shellcheck disable=SC2086
    for version in $(expand $versions); do
        [ -e "$(path "$group" "$artifact")/$version" ] && continue  # Debian's own
        pom "$group" "$artifact" "$version" "$body"
    done
done
plexus="$(debian_version org.codehaus.plexus plexus-utils)"
pom org.codehaus.plexus plexus-utils 1.1 ""
ln -s "$(path org.codehaus.plexus plexus-utils)/$plexus/plexus-utils-$plexus.jar" \
    "$root/org/codehaus/plexus/plexus-utils/1.1/plexus-utils-1.1.jar"
