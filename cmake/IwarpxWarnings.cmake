# Warnings for the project's own code (not applied to third-party headers).
add_library(iwarpx_warnings INTERFACE)
target_compile_options(iwarpx_warnings INTERFACE
  -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual
  -Wconversion -Wsign-conversion -Wnull-dereference -Wdouble-promotion -Wformat=2
  -Wimplicit-fallthrough $<$<CONFIG:Debug>:-Werror>)
