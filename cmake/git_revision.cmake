# Run at every build (not only at configure time): writes OUT with the source tree's revision,
# "-dirty" when tracked files differ from it, so results name the code that produced them. The
# file is rewritten only when the text changes, so an unchanged tree recompiles nothing. Without
# git (a tree copied without .git), the environment's CNNBENCH_REVISION, else "unknown".
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR NOT revision)
  # no git history (a container build copies the tree without .git): the revision it was given
  if("$ENV{CNNBENCH_REVISION}" MATCHES "^[A-Za-z0-9._+-]+$")  # lands in a C string: nothing else
    set(revision "$ENV{CNNBENCH_REVISION}")
  else()
    set(revision unknown)
  endif()
else()
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty)
    string(APPEND revision "-dirty")
  endif()
endif()
set(text "#define CNNBENCH_GIT_REVISION \"${revision}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
