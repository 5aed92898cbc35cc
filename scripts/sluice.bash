# bash completion for sluice(1); installed as
# share/bash-completion/completions/sluice.
_sluice()
{
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "run check stats ps top reload metrics keygen cluster-stats version help" -- "$cur"))
        return
    fi
    case $prev in
    -c|--config) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --pid) COMPREPLY=($(compgen -W "$(sluice ps 2>/dev/null | awk 'NR > 1 && $1 != "-" {print $1}')" -- "$cur")); return ;;
    --shared|--listen|--in|--out|--interval|--window|-n) return ;;
    esac
    [ "$cmd" = run ] && [[ " ${COMP_WORDS[*]} " == *" -- "* ]] && { COMPREPLY=($(compgen -c -- "$cur")); return; }
    local opts
    case $cmd in
    run) opts="-c --config --in --out --dry-run --verbose --" ;;
    check) opts="-c --config --in --out" ;;
    stats) opts="-c --config --pid --shared" ;;
    ps) opts="--clean" ;;
    top) opts="-c --config --pid --shared --once --interval --window -n" ;;
    reload) opts="-c --config --pid --in --out" ;;
    metrics) opts="-c --config --pid --shared --listen" ;;
    cluster-stats) opts="-c --config --listen" ;;
    keygen) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _sluice sluice
