#!/bin/sh
# Started by ViZDoom in place of its engine (doom_a3c/envs/doom/game.py points DoomGame.set_vizdoom_path here); ends as the
# engine itself, with the same pid and the engine's own command line.
#
# Why: ViZDoom starts each engine from a thread of its own that waits for the engine to exit. The parent-death
# signal fires when that thread ends, which happens only once the engine has exited already, or when the whole
# process that started the engine dies, kill -9 included. So no engine outlives its trainer, game process or
# Ray worker, in any mode, without any code of theirs having to run.
#
# 1. setpriv (util-linux) sets PR_SET_PDEATHSIG = SIGKILL and runs this script again with --leashed.
# 2. The parent may have died before the signal was armed: then nobody would send it. The parent's pid,
#    exported by doom_a3c/envs/doom/game.py, tells.
# 3. exec the engine (DOOM_A3C_VIZDOOM): the signal setting survives exec. With DOOM_A3C_ENGINE_QUIET set (play.py's
#    matches: a network game's engines report every handshake), the engine's own output goes to /dev/null.
if [ "$1" = "--leashed" ]; then
    shift
    [ "$PPID" = "$DOOM_A3C_ENGINE_PARENT" ] || exit 1
    [ -z "$DOOM_A3C_ENGINE_QUIET" ] || exec "$DOOM_A3C_VIZDOOM" "$@" >/dev/null 2>&1
    exec "$DOOM_A3C_VIZDOOM" "$@"
fi
exec setpriv --pdeathsig KILL -- "$0" --leashed "$@"
