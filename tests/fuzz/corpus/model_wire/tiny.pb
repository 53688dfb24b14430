
tiny"float32*0:
fc1linear  brelu:
fc2linear 