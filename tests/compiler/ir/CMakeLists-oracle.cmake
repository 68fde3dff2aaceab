# Included from tests/CMakeLists.txt after podsim_add_tests(): numpy_oracle.py writes the
# cases that evaluator_numpy_integration_test runs (HLO modules with NumPy-computed
# expected results) into ${PROJECT_BINARY_DIR}/tests/numpy_cases at build time.
set(PODSIM_NUMPY_CASES_DIR ${PROJECT_BINARY_DIR}/tests/numpy_cases)
file(GLOB PODSIM_NUMPY_ORACLE_SOURCES CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_LIST_DIR}/numpy_oracle.py ${CMAKE_CURRENT_LIST_DIR}/oracle/*.py)
add_custom_command(
  OUTPUT ${PODSIM_NUMPY_CASES_DIR}/.stamp
  COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/numpy_oracle.py
          --out ${PODSIM_NUMPY_CASES_DIR} --seed 1234
  COMMAND ${CMAKE_COMMAND} -E touch ${PODSIM_NUMPY_CASES_DIR}/.stamp
  DEPENDS ${PODSIM_NUMPY_ORACLE_SOURCES} ${PROJECT_SOURCE_DIR}/compiler/ir/opcodes.def
  COMMENT "Generating NumPy oracle cases for evaluator_numpy_integration_test"
  VERBATIM)
add_custom_target(numpy_oracle_cases DEPENDS ${PODSIM_NUMPY_CASES_DIR}/.stamp)
add_dependencies(evaluator_numpy_integration_test numpy_oracle_cases)
