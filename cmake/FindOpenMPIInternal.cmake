# FindOpenMPIInternal
# -------------------
# Locates the *internal* (component-developer) headers and libraries of an installed
# Open MPI 4.1 so that MCA components (BTL, OSC) can be built outside Open MPI's tree.
# Debian/Ubuntu ship them in libopenmpi-dev under <libdir>/openmpi/include/openmpi.
#
# Search order: the wrapper compiler (`mpicc --showme:incdirs` / `--showme:libdirs`),
# then the fixed Debian multiarch paths. Set OpenMPIInternal_MPICC to pick another
# installation (its headers, libraries and ompi_info must belong together).
#
# Result variables:
#   OpenMPIInternal_FOUND
#   OpenMPIInternal_VERSION          e.g. 4.1.4 (OMPI_{MAJOR,MINOR,RELEASE}_VERSION of opal_config.h)
#   OpenMPIInternal_INCLUDE_DIR      dir holding opal_config.h / ompi_config.h (".../include/openmpi")
#   OpenMPIInternal_MPI_INCLUDE_DIR  dir holding mpi.h
#   OpenMPIInternal_OPAL_LIBRARY     libopen-pal
#   OpenMPIInternal_MPI_LIBRARY      libmpi
#   OpenMPIInternal_PKGLIBDIR        Open MPI's own component directory (`ompi_info --path pkglibdir`,
#                                    Debian: <libdir>/openmpi/lib/openmpi3)
#   OpenMPIInternal_OMPI_INFO, OpenMPIInternal_MPIRUN   programs (may be NOTFOUND)
#
# Imported targets (GLOBAL, created once):
#   OpenMPIInternal::opal   internal headers (SYSTEM) + libopen-pal   -> BTL components
#   OpenMPIInternal::ompi   OpenMPIInternal::opal + libmpi            -> OSC components
#   OpenMPIInternal::mpi_c  public MPI C API (mpi.h + libmpi)         -> test programs
#
# Helper:
#   OpenMPIInternal_add_component(<target> TYPE <btl|osc|...> NAME <name>
#                                 SOURCES <files...> LINK <OpenMPIInternal::opal|ompi>
#                                 [VERSION <x.y.z>] [OUTPUT_DIRECTORY <dir>] [INSTALL_DIR <dir>])
#   builds mca_<type>_<name>.so (no "lib" prefix) as a C11 (gnu11) MODULE library with hidden
#   visibility, a linker version script exporting only mca_<type>_<name>_component,
#   -Wl,--no-undefined -Wl,-z,defs, and -Wall -Wextra (-Werror in Debug builds). VERSION (default
#   PROJECT_VERSION) becomes IWARPX_MCA_VERSION_{MAJOR,MINOR,RELEASE}, the component version.

include(FindPackageHandleStandardArgs)

set(_omi_debian_libdir "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openmpi")
if(NOT CMAKE_LIBRARY_ARCHITECTURE)
  set(_omi_debian_libdir "/usr/lib/x86_64-linux-gnu/openmpi")
endif()

find_program(OpenMPIInternal_MPICC NAMES mpicc.openmpi mpicc
             DOC "Open MPI C wrapper compiler used to locate the internal headers")
find_program(OpenMPIInternal_OMPI_INFO NAMES ompi_info HINTS /usr/bin)
find_program(OpenMPIInternal_MPIRUN NAMES mpirun.openmpi mpirun HINTS /usr/bin)

set(_omi_inc_hints "")
set(_omi_lib_hints "")
if(OpenMPIInternal_MPICC)
  execute_process(COMMAND ${OpenMPIInternal_MPICC} --showme:incdirs
                  OUTPUT_VARIABLE _omi_out RESULT_VARIABLE _omi_rc ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_omi_rc EQUAL 0)
    separate_arguments(_omi_out UNIX_COMMAND "${_omi_out}")
    foreach(d ${_omi_out})
      list(APPEND _omi_inc_hints ${d} ${d}/openmpi)
    endforeach()
  endif()
  execute_process(COMMAND ${OpenMPIInternal_MPICC} --showme:libdirs
                  OUTPUT_VARIABLE _omi_out RESULT_VARIABLE _omi_rc ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_omi_rc EQUAL 0)
    separate_arguments(_omi_out UNIX_COMMAND "${_omi_out}")
    list(APPEND _omi_lib_hints ${_omi_out})
  endif()
endif()
list(APPEND _omi_inc_hints ${_omi_debian_libdir}/include/openmpi ${_omi_debian_libdir}/include)
list(APPEND _omi_lib_hints ${_omi_debian_libdir}/lib)

# NO_DEFAULT_PATH: never pick up a stray opal_config.h / libopen-pal of another installation.
find_path(OpenMPIInternal_INCLUDE_DIR NAMES opal_config.h
          HINTS ${_omi_inc_hints} NO_DEFAULT_PATH
          DOC "Open MPI internal headers (opal_config.h, opal/mca/btl/btl.h, ...)")
find_path(OpenMPIInternal_MPI_INCLUDE_DIR NAMES mpi.h
          HINTS ${_omi_inc_hints} NO_DEFAULT_PATH DOC "Open MPI public headers (mpi.h)")
find_library(OpenMPIInternal_OPAL_LIBRARY NAMES open-pal HINTS ${_omi_lib_hints} NO_DEFAULT_PATH)
find_library(OpenMPIInternal_MPI_LIBRARY NAMES mpi HINTS ${_omi_lib_hints} NO_DEFAULT_PATH)

# Open MPI's own component directory: ask ompi_info (authoritative), else derive it.
if(NOT OpenMPIInternal_PKGLIBDIR)
  set(_omi_pkglibdir "")
  if(OpenMPIInternal_OMPI_INFO)
    execute_process(COMMAND ${OpenMPIInternal_OMPI_INFO} --path pkglibdir
                    OUTPUT_VARIABLE _omi_out RESULT_VARIABLE _omi_rc ERROR_QUIET)
    if(_omi_rc EQUAL 0 AND _omi_out MATCHES "Pkglibdir: *([^\n]+)")
      string(STRIP "${CMAKE_MATCH_1}" _omi_pkglibdir)
    endif()
  endif()
  if(NOT _omi_pkglibdir AND OpenMPIInternal_OPAL_LIBRARY)
    get_filename_component(_omi_libdir ${OpenMPIInternal_OPAL_LIBRARY} DIRECTORY)
    foreach(cand ${_omi_libdir}/openmpi3 ${_omi_libdir}/openmpi)  # Debian | upstream default
      if(EXISTS ${cand}/mca_btl_self.so)
        set(_omi_pkglibdir ${cand})
        break()
      endif()
    endforeach()
  endif()
  if(_omi_pkglibdir)
    set(OpenMPIInternal_PKGLIBDIR ${_omi_pkglibdir} CACHE PATH
        "Open MPI's own component directory (ompi_info --path pkglibdir)")
  endif()
endif()

# Every header the components include must be there (a partial/foreign install fails here,
# not with a cryptic compiler error).
set(_omi_missing "")
if(OpenMPIInternal_INCLUDE_DIR)
  foreach(h ompi_config.h opal/mca/btl/btl.h opal/mca/base/mca_base_var.h
            opal/util/output.h ompi/mca/osc/osc.h ompi/constants.h)
    if(NOT EXISTS ${OpenMPIInternal_INCLUDE_DIR}/${h})
      list(APPEND _omi_missing ${h})
    endif()
  endforeach()
  file(STRINGS ${OpenMPIInternal_INCLUDE_DIR}/opal_config.h _omi_ver
       REGEX "^#define OMPI_(MAJOR|MINOR|RELEASE)_VERSION [0-9]+")
  foreach(part MAJOR MINOR RELEASE)
    string(REGEX MATCH "OMPI_${part}_VERSION ([0-9]+)" _m "${_omi_ver}")
    set(_omi_${part} ${CMAKE_MATCH_1})
  endforeach()
  set(OpenMPIInternal_VERSION "${_omi_MAJOR}.${_omi_MINOR}.${_omi_RELEASE}")
endif()

if(NOT OpenMPIInternal_INCLUDE_DIR OR _omi_missing OR NOT OpenMPIInternal_OPAL_LIBRARY
   OR NOT OpenMPIInternal_MPI_LIBRARY OR NOT OpenMPIInternal_MPI_INCLUDE_DIR
   OR NOT OpenMPIInternal_PKGLIBDIR)
  set(_omi_why "")
  list(JOIN _omi_inc_hints " " _omi_inc_str)
  list(JOIN _omi_lib_hints " " _omi_lib_str)
  if(NOT OpenMPIInternal_INCLUDE_DIR)
    string(APPEND _omi_why "opal_config.h not found (searched: ${_omi_inc_str}). ")
  endif()
  if(_omi_missing)
    list(JOIN _omi_missing " " _omi_missing)
    string(APPEND _omi_why
           "headers missing under ${OpenMPIInternal_INCLUDE_DIR}: ${_omi_missing}. ")
  endif()
  if(NOT OpenMPIInternal_OPAL_LIBRARY OR NOT OpenMPIInternal_MPI_LIBRARY)
    string(APPEND _omi_why "libopen-pal.so/libmpi.so not found (searched: ${_omi_lib_str}). ")
  endif()
  if(NOT OpenMPIInternal_PKGLIBDIR)
    string(APPEND _omi_why "Open MPI's component directory not found (no ompi_info, no "
           "<libdir>/openmpi3/mca_btl_self.so); is openmpi-bin installed? ")
  endif()
  string(CONCAT _omi_msg
      "Open MPI internal (component) headers/libraries not found: ${_omi_why}"
      "On Debian/Ubuntu install them with `apt-get install libopenmpi-dev openmpi-bin` "
      "(the internal headers live in ${_omi_debian_libdir}/include/openmpi), "
      "or point -DOpenMPIInternal_MPICC=<prefix>/bin/mpicc at another Open MPI 4.1 install, "
      "or configure with -DIWARPX_BUILD_MCA=OFF to skip the Open MPI components.")
  if(OpenMPIInternal_FIND_REQUIRED)
    message(FATAL_ERROR "${_omi_msg}")
  elseif(NOT OpenMPIInternal_FIND_QUIETLY)
    message(WARNING "${_omi_msg}")
  endif()
endif()

if(OpenMPIInternal_VERSION AND NOT OpenMPIInternal_VERSION MATCHES "^4\\.1\\.")
  # The BTL 3.1 / OSC 3.0 interfaces the components implement exist only in 4.1.x; a v5 build
  # would load (the loader checks no API version) and crash. The sources #error as well.
  message(FATAL_ERROR "Open MPI ${OpenMPIInternal_VERSION} found in ${OpenMPIInternal_INCLUDE_DIR}; "
          "the iwarpx components target Open MPI 4.1.x (BTL API 3.1, OSC API 3.0). "
          "Point -DOpenMPIInternal_MPICC at a 4.1 installation or use -DIWARPX_BUILD_MCA=OFF.")
endif()

find_package_handle_standard_args(OpenMPIInternal
  REQUIRED_VARS OpenMPIInternal_INCLUDE_DIR OpenMPIInternal_MPI_INCLUDE_DIR
                OpenMPIInternal_OPAL_LIBRARY OpenMPIInternal_MPI_LIBRARY OpenMPIInternal_PKGLIBDIR
  VERSION_VAR OpenMPIInternal_VERSION)

if(OpenMPIInternal_FOUND AND NOT TARGET OpenMPIInternal::opal)
  # SYSTEM: Open MPI's headers are not -Wextra clean; our own code still gets the warnings.
  add_library(OpenMPIInternal::opal INTERFACE IMPORTED GLOBAL)
  set_target_properties(OpenMPIInternal::opal PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${OpenMPIInternal_INCLUDE_DIR};${OpenMPIInternal_MPI_INCLUDE_DIR}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES
      "${OpenMPIInternal_INCLUDE_DIR};${OpenMPIInternal_MPI_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${OpenMPIInternal_OPAL_LIBRARY}")
  add_library(OpenMPIInternal::ompi INTERFACE IMPORTED GLOBAL)
  set_target_properties(OpenMPIInternal::ompi PROPERTIES
    INTERFACE_LINK_LIBRARIES "OpenMPIInternal::opal;${OpenMPIInternal_MPI_LIBRARY}")
  add_library(OpenMPIInternal::mpi_c INTERFACE IMPORTED GLOBAL)
  set_target_properties(OpenMPIInternal::mpi_c PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${OpenMPIInternal_MPI_INCLUDE_DIR}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${OpenMPIInternal_MPI_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${OpenMPIInternal_MPI_LIBRARY}")
endif()

mark_as_advanced(OpenMPIInternal_MPICC OpenMPIInternal_OMPI_INFO OpenMPIInternal_MPIRUN
                 OpenMPIInternal_INCLUDE_DIR OpenMPIInternal_MPI_INCLUDE_DIR
                 OpenMPIInternal_OPAL_LIBRARY OpenMPIInternal_MPI_LIBRARY
                 OpenMPIInternal_PKGLIBDIR)

function(OpenMPIInternal_add_component target)
  cmake_parse_arguments(C "" "TYPE;NAME;VERSION;OUTPUT_DIRECTORY;INSTALL_DIR" "SOURCES;LINK" ${ARGN})
  if(NOT C_TYPE OR NOT C_NAME OR NOT C_SOURCES OR NOT C_LINK)
    message(FATAL_ERROR "OpenMPIInternal_add_component: TYPE, NAME, SOURCES and LINK are required")
  endif()
  if(NOT C_VERSION)
    set(C_VERSION ${PROJECT_VERSION})
  endif()
  if(NOT C_VERSION MATCHES "^([0-9]+)\\.([0-9]+)\\.([0-9]+)")
    message(FATAL_ERROR "OpenMPIInternal_add_component: VERSION '${C_VERSION}' is not x.y.z")
  endif()
  set(vdefs IWARPX_MCA_VERSION_MAJOR=${CMAKE_MATCH_1} IWARPX_MCA_VERSION_MINOR=${CMAKE_MATCH_2}
            IWARPX_MCA_VERSION_RELEASE=${CMAKE_MATCH_3})
  set(sym mca_${C_TYPE}_${C_NAME}_component)
  set(vscript ${CMAKE_CURRENT_BINARY_DIR}/${target}.map)
  # The MCA loader dlopen()s with RTLD_GLOBAL: anything else we export lands in the global
  # namespace of every MPI process. Export exactly the component struct.
  file(CONFIGURE OUTPUT ${vscript} CONTENT "{\n  global: ${sym};\n  local: *;\n};\n")

  add_library(${target} MODULE ${C_SOURCES})
  target_link_libraries(${target} PRIVATE ${C_LINK})
  target_compile_definitions(${target} PRIVATE ${vdefs})
  # The loader only accepts mca_<type>_<name>.so exporting mca_<type>_<name>_component.
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME mca_${C_TYPE}_${C_NAME} SUFFIX ".so"
    C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS ON  # -std=gnu11
    C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON
    LINK_DEPENDS ${vscript})
  if(C_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${C_OUTPUT_DIRECTORY})
  endif()
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wshadow -Wformat=2 -Wimplicit-fallthrough -Wstrict-prototypes
    -Wmissing-prototypes -Wconversion -Wsign-conversion $<$<CONFIG:Debug>:-Werror>)
  # --no-undefined/-z defs: components are dlopen()ed RTLD_LAZY, so an unresolved symbol would
  # only show up when first called inside a running MPI job. Catch it at link time instead.
  target_link_options(${target} PRIVATE
    -Wl,--no-undefined -Wl,-z,defs -Wl,--version-script=${vscript})
  if(C_INSTALL_DIR)
    install(TARGETS ${target} LIBRARY DESTINATION ${C_INSTALL_DIR} COMPONENT openmpi_components)
  endif()
endfunction()
