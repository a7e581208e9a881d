#!/bin/sh
# Writes the Maven version aliases (maven-aliases.txt) as relocation poms under $1, plus plexus-utils 1.1: Maven
# adds that version to every old plugin (maven-clean-plugin 2.5, the default) and Debian has only 3.x, so it is
# Debian's jar under the old name (a relocation is not followed for that injected dependency).
set -eu
root="$1" aliases="$2"
pom() {  # group artifact version [relocation-version]
    dir="$root/$(echo "$1" | tr . /)/$2/$3"
    mkdir -p "$dir"
    moved=""
    [ -n "${4:-}" ] && moved="  <distributionManagement><relocation><version>$4</version></relocation></distributionManagement>
"
    printf '<project>\n  <modelVersion>4.0.0</modelVersion>\n  <groupId>%s</groupId>\n  <artifactId>%s</artifactId>\n  <version>%s</version>\n%s</project>\n' \
        "$1" "$2" "$3" "$moved" >"$dir/$2-$3.pom"
}
grep -v '^#' "$aliases" | while read -r group artifact target versions; do
    for version in $versions; do
        pom "$group" "$artifact" "$version" "$target"
    done
done
pom org.codehaus.plexus plexus-utils 1.1
ln -s /usr/share/maven-repo/org/codehaus/plexus/plexus-utils/3.4.2/plexus-utils-3.4.2.jar \
    "$root/org/codehaus/plexus/plexus-utils/1.1/plexus-utils-1.1.jar"
