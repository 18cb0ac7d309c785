# Each top-level folder is one layer (docs/design.md §2), built as an OBJECT library. The installed
# `mixle` library is made of all layers' objects; the external libraries a layer links are
# collected so that `mixle` (and its exported package) links them once.
#
#   mixle_add_layer(<name> SOURCES <files…> [USES <other layers…>] [LINK <external targets…>]
#                   [HEADER_ONLY <external header-only targets…>] [DEFINES <macros…>])
function(mixle_add_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;USES;LINK;HEADER_ONLY;DEFINES" ${ARGN})
  if(NOT L_SOURCES)   # a layer still being written: keep the build whole
    file(WRITE ${PROJECT_BINARY_DIR}/${name}_empty.cpp "// ${name} has no sources yet\n")
    set(L_SOURCES ${PROJECT_BINARY_DIR}/${name}_empty.cpp)
  endif()
  add_library(${name} OBJECT ${L_SOURCES})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  target_compile_features(${name} PUBLIC cxx_std_20)
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
  foreach(dep IN LISTS L_USES)
    target_include_directories(${name} PRIVATE $<TARGET_PROPERTY:${dep},INTERFACE_INCLUDE_DIRECTORIES>)
    target_compile_definitions(${name} PRIVATE $<TARGET_PROPERTY:${dep},INTERFACE_COMPILE_DEFINITIONS>)
  endforeach()
  if(L_LINK)
    target_link_libraries(${name} PUBLIC ${L_LINK})
    set_property(GLOBAL APPEND PROPERTY MIXLE_LINK_DEPS ${L_LINK})
  endif()
  if(L_HEADER_ONLY)
    target_link_libraries(${name} PUBLIC ${L_HEADER_ONLY})
  endif()
  if(L_DEFINES)
    target_compile_definitions(${name} PUBLIC ${L_DEFINES})
  endif()
  set_property(GLOBAL APPEND PROPERTY MIXLE_LAYERS ${name})
endfunction()

# Build-feature macros every layer may test (MIXLE_HAVE_CUDA, MIXLE_CUDA_SIM etc.), as 0/1.
function(mixle_feature_definitions out)
  set(defs)
  foreach(f CUDA NCCL GLOO MPI)
    if(MIXLE_HAVE_${f})
      list(APPEND defs MIXLE_HAVE_${f}=1)
    else()
      list(APPEND defs MIXLE_HAVE_${f}=0)
    endif()
  endforeach()
  if(MIXLE_CUDA_SIM)
    list(APPEND defs MIXLE_CUDA_SIM=1)
  else()
    list(APPEND defs MIXLE_CUDA_SIM=0)
  endif()
  set(${out} ${defs} PARENT_SCOPE)
endfunction()
